"""Trains channel-tiny: generates and packs the corpus, trains for a wall-clock budget, logs the
loss and writes the weights (weights.py: fp16 chunks of at most 15 MiB).

    python3 train.py --vocab vocab.json --out OUT --minutes 7          # the real run (CUDA)
    python3 train.py --vocab vocab.json --out OUT --preset smoke --minutes 1 --conversations 5000

Outputs in OUT: weights.json (config and tensor index), weights.bin.000..., loss.tsv (step,
seconds, tokens seen, training loss, held-out loss, learning rate), train.log."""

import argparse
import dataclasses
import json
import math
import os
import sys
import time

import numpy as np
import torch

import config as geometry
import data
import model as gemma
import weights


SAVE_SECONDS = 120


def log(out, text):
    print(text, flush=True)
    with open(os.path.join(out, "train.log"), "a") as f:
        f.write(text + "\n")


def batch_loss(net, batch, device, autocast):
    tokens, positions, doc, weight = (torch.from_numpy(a).to(device, non_blocking=True) for a in batch)
    tokens, positions, doc = tokens.long(), positions.long(), doc.long()
    with torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=autocast):
        logits = net(tokens, positions, doc)
    target = torch.roll(tokens, -1, dims=1)
    nll = torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), target.view(-1), reduction="none")
    return (nll * weight.view(-1)).sum() / weight.sum().clamp(min=1.0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--vocab", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--preset", choices=sorted(geometry.PRESETS), default="tiny")
    p.add_argument("--minutes", type=float, default=7.0, help="wall-clock budget of the training loop")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: by time only)")
    p.add_argument("--conversations", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--batch", type=int, default=128, help="rows per step")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="corpus processes (default: the CPUs this process may run on)")
    p.add_argument("--resume", help="directory of weights to start from (a previous run's output)")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    device = torch.device(args.device)
    autocast = device.type == "cuda"
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    log(args.out, f"torch {torch.__version__}, device {device}, {args.workers} workers, args {vars(args)}")

    with open(args.vocab) as f:
        n_vocab = len(json.load(f)["tokens"])
    pad_id = 0
    train_convs = data.encode_conversations(args.vocab, args.seed, args.conversations, "train", args.workers)
    test_convs = data.encode_conversations(args.vocab, args.seed + 1, 2000, "test", args.workers)
    rows = data.pack(train_convs, args.seq, pad_id, rng)
    test_rows = data.pack(test_convs, args.seq, pad_id, rng)
    n_tokens = sum(len(c[0]) for c in train_convs)
    n_trained = int(rows[3].sum())
    del train_convs, test_convs
    log(args.out, f"corpus: {args.conversations} conversations, {n_tokens} tokens ({n_trained} trained), "
                  f"{rows[0].shape[0]} rows of {args.seq}; {time.time() - start:.1f} s")

    if args.resume:
        config, state = weights.load(args.resume)
        net = gemma.Gemma4(config)
        net.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    else:
        config = dataclasses.replace(geometry.PRESETS[args.preset], n_vocab=n_vocab)
        net = gemma.Gemma4(config)
    if config.n_vocab != n_vocab:
        sys.exit(f"the weights have {config.n_vocab} tokens, the vocabulary {n_vocab}")
    net.to(device)
    n_params = sum(p.numel() for p in net.parameters())
    log(args.out, f"model {config}: {n_params} parameters")
    decay = [p for n, p in net.named_parameters() if p.dim() == 2]
    no_decay = [p for n, p in net.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))

    budget = args.minutes * 60.0
    train_start = time.time()
    n_rows = rows[0].shape[0]
    step, seen, epoch_order, cursor = 0, 0, rng.permutation(n_rows), 0
    loss_log = open(os.path.join(args.out, "loss.tsv"), "w")
    loss_log.write("step\tseconds\ttokens\tloss\theld_out_loss\tlr\n")
    def save():
        tensors = {k: v.detach().float().cpu().numpy() for k, v in net.state_dict().items()}
        weights.save(args.out, config, tensors, {"steps": step, "tokens": seen, "parameters": n_params,
                                                 "conversations": args.conversations, "seed": args.seed})

    # Weights are also written every SAVE_SECONDS, so that a run cut short (a crash, the device's
    # time limit) still brings back its latest weights.
    last_save = time.time()
    # The mean training loss since the last log line, summed on the device (no sync per step).
    loss_sum, loss_count = torch.zeros((), device=device), 0
    while True:
        elapsed = time.time() - train_start
        if elapsed >= budget or (args.max_steps and step >= args.max_steps):
            break
        # Warmup, then cosine decay to a tenth, over the time budget (or the step limit).
        progress = max(elapsed / budget, step / args.max_steps if args.max_steps else 0.0)
        lr = args.lr * min(1.0, (step + 1) / args.warmup) * (0.1 + 0.45 * (1 + math.cos(math.pi * min(progress, 1.0))))
        for g in opt.param_groups:
            g["lr"] = lr
        if cursor + args.batch > n_rows:
            epoch_order, cursor = rng.permutation(n_rows), 0
        pick = np.sort(epoch_order[cursor:cursor + args.batch])
        cursor += args.batch
        batch = tuple(a[pick] for a in rows)
        loss = batch_loss(net, batch, device, autocast)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        step += 1
        seen += args.batch * args.seq
        loss_sum += loss.detach()
        loss_count += 1
        if step % 100 == 0 or step in (1, 10, 50):
            with torch.no_grad():
                held = batch_loss(net, tuple(a[:args.batch] for a in test_rows), device, autocast).item()
            mean = loss_sum.item() / loss_count
            loss_sum.zero_()
            loss_count = 0
            seconds = time.time() - train_start
            loss_log.write(f"{step}\t{seconds:.1f}\t{seen}\t{mean:.4f}\t{held:.4f}\t{lr:.6f}\n")
            loss_log.flush()
            log(args.out, f"step {step} {seconds:.0f}s loss {mean:.4f} held-out {held:.4f} lr {lr:.2e} "
                          f"{seen / max(seconds, 1e-9):.0f} tok/s")
            if time.time() - last_save > SAVE_SECONDS:
                save()
                last_save = time.time()
    log(args.out, f"trained {step} steps, {seen} tokens in {time.time() - train_start:.1f} s; total {time.time() - start:.1f} s")
    save()
    log(args.out, f"weights written; total {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
