"""Asks Iris (`iris generate`) and, when given, llama.cpp (`llama-mtmd-cli`) for the greedy answer
of an exported model on held-out first steps of a dataset, and prints both beside the expected
answer: the hand check of docs/tiny-model.md section 5. Only first steps are used: a one-message
prompt is what both command-line tools take.

    /usr/bin/python3 scripts/training/compare_engines.py --data DATASET_DIR \\
        --model RUN/gguf/iris-tiny-cua.gguf --mmproj RUN/gguf/iris-tiny-cua.mmproj.gguf \\
        --iris build/release/app/iris [--llama /path/to/llama-mtmd-cli] [--count 10]
"""

import argparse
import json
import os
import subprocess

import prompt


def first_steps(data_dir, count):
    with open(os.path.join(data_dir, "examples.jsonl"), encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    held = [r for r in rows if r.get("split") != "train" and not r["history"]]
    return held[:count]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--mmproj", required=True)
    parser.add_argument("--iris", required=True, help="the iris executable")
    parser.add_argument("--llama", help="llama-mtmd-cli, to compare with llama.cpp")
    parser.add_argument("--count", type=int, default=10)
    parser.add_argument("--threads", default="2")
    args = parser.parse_args()
    agree = correct = 0
    rows = first_steps(args.data, args.count)
    for row in rows:
        text = prompt.uitars_system_prompt() + row["instruction"] + "<__media__>"
        image = os.path.join(args.data, row["image"])
        common = ["-m", args.model, "--mmproj", args.mmproj, "--image", image, "-p", text,
                  "--temp", "0", "-n", "40", "-t", args.threads]
        iris = run([args.iris, "generate", "--chat", *common]).strip()
        line = f"{row['id']}: want {row['answer']!r}  iris {iris!r}"
        correct += iris == row["answer"]
        if args.llama:
            # --no-escape: llama.cpp would otherwise turn the prompt's literal \n, \' and \"
            # (UI-TARS's action list has them) into other characters.
            llama = run([args.llama, "--jinja", "--no-escape", *common]).strip()
            agree += llama == iris
            line += f"  llama.cpp {llama!r}"
        print(line, flush=True)
    print(f"iris exact {correct}/{len(rows)}" +
          (f"; llama.cpp agrees with iris {agree}/{len(rows)}" if args.llama else ""))


if __name__ == "__main__":
    main()
