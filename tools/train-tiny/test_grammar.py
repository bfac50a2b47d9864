"""The corpus is in the engine's turn grammar: every event of a few hundred conversations that
the engine renders (system turns with tool declarations, user turns with and without
INPUT_FLAG_REASON, `channel run`'s template, tool responses) is rendered by grammar.py and by the
engine (tests/train_tiny/render_turns), and the texts must be identical. Both splits are used.

    python3 test_grammar.py --render build/tests/train_tiny/render_turns
"""

import argparse
import json
import subprocess
import sys

import corpus


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--render", required=True, help="the render_turns driver")
    parser.add_argument("--conversations", type=int, default=300)
    args = parser.parse_args()
    events = [e for split in ("train", "test") for i in range(args.conversations)
              for e in corpus.conversation_events(seed=3, index=i, split=split) if e[0] != "model"]
    kinds = sorted({e[0] for e in events} | {"reason" for e in events if e[0] == "user" and e[2]})
    if kinds != ["chat", "reason", "system", "tool_response", "user"]:
        sys.exit(f"the conversations do not cover every kind of event: {kinds}")
    result = subprocess.run([args.render], input="".join(json.dumps(e) + "\n" for e in events),
                            capture_output=True, text=True, check=True)
    engine = [json.loads(line) for line in result.stdout.splitlines()]
    if len(engine) != len(events):
        sys.exit(f"{len(events)} events, {len(engine)} renderings")
    bad = [(e, ours, theirs) for e, theirs in zip(events, engine) if (ours := corpus.render(e)) != theirs]
    for e, ours, theirs in bad[:5]:
        print(f"event {json.dumps(e)}\n  corpus: {ours!r}\n  engine: {theirs!r}")
    print(f"{len(events) - len(bad)} of {len(events)} events rendered identically")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
