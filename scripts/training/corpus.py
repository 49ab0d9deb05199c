"""The text the tiny model sees, for training its vocabulary: the chat template's fixed text, the
UI-TARS prompt, the dataset's instructions and answers, the history lines and every coordinate
number, each a separate document (pre-tokens never cross documents)."""

import prompt


def documents(examples):
    """`examples`: dicts with "instruction" and "answer" (the dataset's examples.jsonl rows).
    The fixed prompt text is repeated once per example, as often as the model reads it, so that
    its words become single tokens before rarer ones."""
    docs = [prompt.DEFAULT_SYSTEM, prompt.uitars_system_prompt()] * max(1, len(examples))
    docs += ["<|im_start|>system\n", "<|im_end|>\n<|im_start|>user\n", "<|im_start|>assistant\n"]
    docs += [f"(screenshot of step {i} omitted)" for i in range(1, 21)]
    docs += [str(n) for n in range(0, 4096)]
    for e in examples:
        docs.append(e["instruction"])
        docs.append(e["answer"])
    return docs
