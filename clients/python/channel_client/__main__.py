"""Runs one turn against an engine and streams the reply to stdout.

    python3 -m channel_client --binary build/channel --model M.gguf "Hello"

Thoughts (with --reason) go to stderr. Elastic yields are resumed automatically, so the whole
reply is printed. Exit status: 0 when the reply ended (end of turn or max tokens), 1 otherwise
(the engine failed, exited or timed out, or the model called a tool, which this runner cannot run).
"""

from __future__ import annotations

import argparse
import sys

from .client import Client, EngineExited
from .protocol import STOP_ELASTIC_YIELD, STOP_END_OF_TURN, STOP_MAX_TOKENS


def _parse_args(argv):
    parser = argparse.ArgumentParser(prog="python3 -m channel_client", description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="engine executable")
    parser.add_argument("--model", required=True, help="model path passed to the engine")
    parser.add_argument("--reason", action="store_true", help="let the model think first (thoughts on stderr)")
    parser.add_argument("--raw", action="store_true", help="send the prompt verbatim, without the turn template")
    parser.add_argument("--max-tokens", type=int, help="tokens per decode burst (SET_CONFIG max_tokens)")
    parser.add_argument("--temp", type=float, help="sampling temperature (SET_CONFIG temp)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for startup and each burst")
    parser.add_argument(
        "--engine-arg", action="append", default=[], metavar="ARG", help="extra engine argument (repeatable)"
    )
    parser.add_argument("prompt")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = _parse_args(argv)
    client = Client(args.binary, args.model, args.engine_arg)
    client.on("content", lambda token: print(token.text, end="", flush=True))
    client.on("thought", lambda token: print(token.text, end="", file=sys.stderr, flush=True))
    client.on("tool_call", lambda call: print(f"\n[tool call {call.tool_name} {call.args_json}]", file=sys.stderr))
    client.on("error", lambda error: print(f"\n[error: {error.message}]", file=sys.stderr))
    try:
        client.start()
    except OSError as error:
        print(f"cannot start the engine: {error}", file=sys.stderr)
        return 1
    with client:
        try:
            client.wait_ready(args.timeout)
            config = {"max_tokens": args.max_tokens, "temp": args.temp}
            config = {name: value for name, value in config.items() if value is not None}
            if config:
                client.set_config(**config)
            turn = client.collect_turn(client.send_input(args.prompt, reason=args.reason, raw=args.raw), args.timeout)
            while turn.reason == STOP_ELASTIC_YIELD:
                turn = client.collect_turn(client.send_resume(), args.timeout)
        except (EngineExited, TimeoutError) as error:
            print(f"\n[{error}]", file=sys.stderr)
            return 1
    print()
    return 0 if turn.reason in (STOP_END_OF_TURN, STOP_MAX_TOKENS) else 1


if __name__ == "__main__":
    sys.exit(main())
