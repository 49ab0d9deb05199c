"""The prompt of one agent step exactly as Iris renders it for the tiny model: the `uitars`
action format (agent/prompt_builder.cpp: the format's prompt plus the task open the first user
turn), the Qwen2-VL chat template (inference/chat_template.cpp: the default system message, then
ChatML turns) and `--history 1` (only the current screenshot is an image; an earlier one is the
line "(screenshot of step N omitted)"). Successful clicks, typing and scrolls give no feedback
text (agent/agent_loop.cpp), so an earlier step is its omitted-screenshot line and its answer.

The UI-TARS prompt is read from agent/actions/system_prompts.cpp so the two cannot drift.
"""

import os
import re

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
IMAGE = "<|vision_start|><|image_pad|><|vision_end|>"
DEFAULT_SYSTEM = "You are a helpful assistant."


def uitars_system_prompt():
    path = os.path.join(REPO, "agent", "actions", "system_prompts.cpp")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    m = re.search(r'kUiTarsPrompt =\s*R"\((.*?)\)";', source, re.S)
    if m is None:
        raise RuntimeError(f"{path}: kUiTarsPrompt not found")
    return m.group(1)


_SYSTEM_PROMPT = None


def render(instruction, history):
    """The prompt text (special tokens as text, one image marker for the current screenshot) for
    the step after the answers in `history`, ending with the assistant turn's opening."""
    global _SYSTEM_PROMPT
    if _SYSTEM_PROMPT is None:
        _SYSTEM_PROMPT = uitars_system_prompt()
    turns = [("system", DEFAULT_SYSTEM)]
    task = _SYSTEM_PROMPT + instruction
    for i, answer in enumerate(history):
        omitted = f"(screenshot of step {i + 1} omitted)"
        if i == 0:
            turns.append(("user", task + omitted))
        else:
            turns.append(("user", omitted))
        turns.append(("assistant", answer))
    if history:
        turns.append(("user", IMAGE))
    else:
        turns.append(("user", task + IMAGE))
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in turns)
    return text + "<|im_start|>assistant\n"


def answer_text(answer):
    """What the model writes for a step: the action and the end of its turn."""
    return answer + "<|im_end|>"
