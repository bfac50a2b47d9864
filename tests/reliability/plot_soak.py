#!/usr/bin/env python3
"""Draws a soak's snapshot table (soak.py --csv) as a PNG: the engine's RSS and the tokens/s of
each stretch between snapshots, against the streamed tokens.

    /usr/bin/python3 tests/reliability/plot_soak.py soak.csv -o docs/images/soak-rss.png
    # Debian: apt-get install python3-matplotlib
"""

import argparse
import csv

import matplotlib

matplotlib.use("Agg")  # files only: no display on these machines
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("csv")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--title", default="soak: channel serve, scripted model over channel-tiny's vocabulary")
    args = parser.parse_args()
    with open(args.csv, encoding="ascii") as f:
        rows = list(csv.DictReader(f))
    tokens = [int(r["tokens"]) / 1e6 for r in rows]
    rss = [float(r["rss_mib"]) for r in rows]
    rate = [float(r["tok_s"]) for r in rows]
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(7, 4.5), dpi=90)
    top.plot(tokens, rss, color="tab:blue", linewidth=1)
    top.set_ylabel("RSS (MiB)")
    # A flat line on an axis from 0 shows flat as flat; an auto-scaled axis would blow up noise.
    top.set_ylim(0, max(rss) * 1.25)
    top.grid(True, alpha=0.3)
    bottom.plot(tokens, rate, color="tab:green", linewidth=0.6)
    bottom.set_ylabel("tokens/s")
    bottom.set_ylim(0, max(rate) * 1.1)
    bottom.set_xlabel("streamed tokens (millions)")
    bottom.grid(True, alpha=0.3)
    last = rows[-1]
    top.set_title(f"{args.title}\n{len(rows)} snapshots, the last at {int(last['tokens']):,} tokens and "
                  f"{float(last['elapsed_s']) / 60:.0f} min; RSS {min(rss)}..{max(rss)} MiB", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
