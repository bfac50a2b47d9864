"""Draws a run's loss.tsv (train.py's log: step, seconds, tokens, loss, held_out_loss, lr) as a
PNG: training and held-out loss against the step, on a log scale.

    python3 plot_loss.py run1/loss.tsv -o run1/loss.png     # Debian: apt-get install python3-matplotlib
"""

import argparse
import csv

import matplotlib

matplotlib.use("Agg")  # files only: no display on these machines
import matplotlib.pyplot as plt  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tsv")
    parser.add_argument("-o", "--out", required=True)
    parser.add_argument("--title", default="channel-tiny")
    args = parser.parse_args()
    with open(args.tsv, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    steps = [int(r["step"]) for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot(steps, [float(r["loss"]) for r in rows], label="training loss (mean since the previous line)")
    ax.plot(steps, [float(r["held_out_loss"]) for r in rows], label="held-out loss (held-out conversations)")
    ax.set_yscale("log")
    ax.set_xlabel("step (128 rows of 512 tokens)")
    ax.set_ylabel("cross-entropy (nats per trained token)")
    last = rows[-1]
    ax.set_title(f"{args.title}: {int(last['step'])} steps, {int(last['tokens']) / 1e6:.1f}M tokens, "
                 f"{float(last['seconds']):.0f} s")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out)


if __name__ == "__main__":
    main()
