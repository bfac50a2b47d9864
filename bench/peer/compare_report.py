#!/usr/bin/python3
"""Helpers of bench/compare-llamacpp (Debian's python3, standard library only).

  compare_report.py weights MODEL.gguf       weight bytes read per decoded token, as JSON
  compare_report.py round-summary FILE...    one line per result file (progress on stderr)
  compare_report.py report WORKDIR [options] the comparison table (stdout) from the run's files

The weight bytes per decoded token are those of every per-layer tensor (blk.*) plus the output
matrix (output.weight, or token_embd.weight when the output is tied to the embedding): batch-1
decode reads all of them once per token; the single embedding row it looks up is left out.
Sizes come from each tensor's type and shape (block sizes of the GGML types), or, for a type not
in the table, from the distance to the next tensor's data in the file.
"""

import json
import os
import re
import statistics
import struct
import sys

# GGML type id: (bytes per block, values per block)
GGML_TYPE_SIZES = {
    0: (4, 1),  # F32
    1: (2, 1),  # F16
    2: (18, 32),  # Q4_0
    3: (20, 32),  # Q4_1
    6: (22, 32),  # Q5_0
    7: (24, 32),  # Q5_1
    8: (34, 32),  # Q8_0
    9: (36, 32),  # Q8_1
    10: (84, 256),  # Q2_K
    11: (110, 256),  # Q3_K
    12: (144, 256),  # Q4_K
    13: (176, 256),  # Q5_K
    14: (210, 256),  # Q6_K
    15: (292, 256),  # Q8_K
    24: (1, 1),  # I8
    25: (2, 1),  # I16
    26: (4, 1),  # I32
    27: (8, 1),  # I64
    28: (8, 1),  # F64
    30: (2, 1),  # BF16
}
GGML_TYPE_NAMES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_k",
                   11: "q3_k", 12: "q4_k", 13: "q5_k", 14: "q6_k", 30: "bf16"}


class GgufReader:
    """Reads the header and tensor table of a GGUF file (versions 2 and 3)."""

    SCALAR = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            # The header and tensor table of the largest vocabularies fit well within this.
            self.buf = f.read(64 << 20)
        self.pos = 0
        if self.buf[:4] != b"GGUF":
            raise ValueError(f"{path} is not a GGUF file")
        self.pos = 4
        version = self.u32()
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        n_tensors = self.u64()
        n_kv = self.u64()
        self.kv = {}
        for _ in range(n_kv):
            key = self.string()
            vtype = self.u32()
            self.kv[key] = self.value(vtype)
        self.tensors = []
        for _ in range(n_tensors):
            name = self.string()
            n_dims = self.u32()
            dims = [self.u64() for _ in range(n_dims)]
            ttype = self.u32()
            offset = self.u64()
            self.tensors.append({"name": name, "dims": dims, "type": ttype, "offset": offset})
        alignment = int(self.kv.get("general.alignment", 32))
        self.data_start = (self.pos + alignment - 1) // alignment * alignment
        self.file_size = os.path.getsize(path)

    def need(self, n):
        if self.pos + n > len(self.buf):
            raise ValueError(f"{self.path}: GGUF header larger than expected or truncated")

    def unpack(self, fmt):
        size = struct.calcsize(fmt)
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def u32(self):
        return self.unpack("<I")

    def u64(self):
        return self.unpack("<Q")

    def string(self):
        n = self.u64()
        self.need(n)
        s = self.buf[self.pos:self.pos + n]
        self.pos += n
        return s.decode("utf-8", errors="replace")

    def value(self, vtype):
        if vtype in self.SCALAR:
            return self.unpack(self.SCALAR[vtype])
        if vtype == 8:
            return self.string()
        if vtype == 9:
            item_type = self.u32()
            n = self.u64()
            if item_type in self.SCALAR:  # skipped, not decoded: vocabularies hold 10^5-10^6 items
                size = struct.calcsize(self.SCALAR[item_type]) * n
                self.need(size)
                self.pos += size
                return None
            if item_type == 8:
                for _ in range(n):
                    self.need(8)
                    (length,) = struct.unpack_from("<Q", self.buf, self.pos)
                    self.pos += 8 + length
                self.need(0)
                return None
            return [self.value(item_type) for _ in range(n)]
        raise ValueError(f"{self.path}: unknown GGUF value type {vtype}")

    def tensor_bytes(self):
        """Bytes of each tensor: from its type and shape, else the distance to the next data."""
        ordered = sorted(self.tensors, key=lambda t: t["offset"])
        ends = {}
        for i, t in enumerate(ordered):
            end = ordered[i + 1]["offset"] if i + 1 < len(ordered) else self.file_size - self.data_start
            ends[t["name"]] = end - t["offset"]
        sizes = {}
        for t in self.tensors:
            count = 1
            for d in t["dims"]:
                count *= d
            if t["type"] in GGML_TYPE_SIZES:
                block_bytes, block_values = GGML_TYPE_SIZES[t["type"]]
                sizes[t["name"]] = count // block_values * block_bytes
            else:
                sizes[t["name"]] = ends[t["name"]]
        return sizes


def weights(path):
    g = GgufReader(path)
    sizes = g.tensor_bytes()
    types = {t["name"]: t["type"] for t in g.tensors}
    layer_bytes = sum(b for name, b in sizes.items() if name.startswith("blk."))
    output = "output.weight" if "output.weight" in sizes else "token_embd.weight"
    if output not in sizes:
        raise ValueError(f"{path} has neither output.weight nor token_embd.weight")
    return {
        "model": path,
        "architecture": g.kv.get("general.architecture"),
        "layers": sum(1 for name in sizes if name.endswith(".attn_norm.weight") and name.startswith("blk.")),
        "file_bytes": g.file_size,
        "layer_bytes": layer_bytes,
        "output_tensor": output,
        "output_type": GGML_TYPE_NAMES.get(types[output], str(types[output])),
        "output_bytes": sizes[output],
        "weight_bytes_per_token": layer_bytes + sizes[output],
    }


# ---- result files ----

def read_llama(path):
    """llama-bench -o jsonl: {'pp': tok/s, 'tg': tok/s, 'tg_depth': tok/s, 'depth': n} (keys present when run)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("n_prompt", 0) > 0 and r.get("n_gen", 0) == 0:
                out["pp"] = r["avg_ts"]
                out["prompt_tokens"] = r["n_prompt"]
            elif r.get("n_gen", 0) > 0 and r.get("n_prompt", 0) == 0:
                if r.get("n_depth", 0) > 0:
                    out["tg_depth"] = r["avg_ts"]
                    out["depth"] = r["n_depth"]
                else:
                    out["tg"] = r["avg_ts"]
                out["gen_tokens"] = r["n_gen"]
            out.setdefault("cpu_info", r.get("cpu_info"))
            out.setdefault("build_commit", r.get("build_commit"))
            out.setdefault("model_type", r.get("model_type"))
            out.setdefault("n_threads", r.get("n_threads"))
    return out


def read_loaded_variant(path):
    """The CPU variant llama.cpp loaded, from its 'loaded CPU backend from .../libggml-cpu-NAME.so' log."""
    try:
        with open(path, errors="replace") as f:
            m = re.search(r"loaded CPU backend from \S*libggml-cpu-([A-Za-z0-9_]+)\.so", f.read())
    except OSError:
        return None
    return m.group(1) if m else None


def read_last_json(path):
    """The last line of a file that parses as a JSON object (channel bench --json, channel_read_bandwidth --json)."""
    with open(path) as f:
        lines = [line.strip() for line in f if line.strip().startswith("{")]
    if not lines:
        raise ValueError(f"no JSON object in {path}")
    return json.loads(lines[-1])


def fmt_rate(x):
    if x is None:
        return "-"
    return f"{x:.1f}" if x < 1000 else f"{x:.0f}"


def round_summary(paths):
    """One progress line: for llama-bench outputs (merged), else for each result file."""
    if paths and all(p.endswith(".jsonl") for p in paths):
        r = {}
        for path in paths:
            r.update({k: v for k, v in read_llama(path).items() if v is not None})
        parts = []
        if "pp" in r:
            parts.append(f"pp{r['prompt_tokens']} {fmt_rate(r['pp'])}")
        if "tg" in r:
            parts.append(f"tg{r['gen_tokens']} {fmt_rate(r['tg'])}")
        if "tg_depth" in r:
            parts.append(f"tg{r['gen_tokens']}@d{r['depth']} {fmt_rate(r['tg_depth'])}")
        print(", ".join(parts) + " tok/s")
        return
    for path in paths:
        r = read_last_json(path)
        if os.path.basename(path).startswith("bandwidth"):
            print(f"{r['read_gb_s']:.2f} GB/s ({r['threads']} threads, {r['streams']} streams each)")
            continue
        parts = [f"pp{r['prompt_tokens']} {fmt_rate(r['prefill_tok_s'])}",
                 f"tg{r['gen_tokens']} {fmt_rate(r['decode_tok_s'])}"]
        if r.get("decode_full_ring_tok_s") is not None:
            parts.append(f"tg{r['gen_tokens']} ring full (d{r.get('full_ring_depth')}) "
                         f"{fmt_rate(r['decode_full_ring_tok_s'])}")
        print(", ".join(parts) + " tok/s")


# ---- the report ----

def read_noise(path):
    """noise.txt lines 'NAME SECONDS OTHER_CPUS kept|redone' -> [(name, seconds, cpus, kept)]."""
    try:
        with open(path) as f:
            rows = [line.split() for line in f if line.strip()]
    except OSError:
        return []
    return [(r[0], float(r[1]), float(r[2]), len(r) < 4 or r[3] == "kept") for r in rows if len(r) >= 3]


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def spread(values):
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return ""
    return f"{min(values):.1f}-{max(values):.1f}"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        return "unknown CPU", set()
    m = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return (m.group(1).strip() if m else "unknown CPU"), set(flags.group(1).split()) if flags else set()


def report(args):
    import argparse

    p = argparse.ArgumentParser(prog="compare_report.py report")
    p.add_argument("workdir")
    p.add_argument("--model", required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--rounds", type=int, required=True)
    p.add_argument("--variants", required=True, help="comma-separated: auto or variant names, in run order")
    p.add_argument("--peer", default="llama.cpp")
    p.add_argument("--load-before", default="")
    p.add_argument("--load-after", default="")
    p.add_argument("--command", default="")
    p.add_argument("--json-out", default="")
    a = p.parse_args(args)

    w = weights(a.model)
    bandwidths = []
    for name in sorted(os.listdir(a.workdir)):
        if name.startswith("bandwidth") and name.endswith(".json"):
            bandwidths.append(read_last_json(os.path.join(a.workdir, name)))
    if not bandwidths:
        raise ValueError("no bandwidth measurement in " + a.workdir)
    bw = max(bandwidths, key=lambda r: r["read_gb_s"])
    ceiling = bw["read_gb_s"] * 1e9 / w["weight_bytes_per_token"]

    rounds = [os.path.join(a.workdir, f"round-{i}") for i in range(1, a.rounds + 1)]
    variants = a.variants.split(",")
    engines = []  # (label, {'pp': [...], 'tg': [...], 'tgd': [...]}, extra)
    p_tokens = g_tokens = depth = None
    for v in variants:
        samples = {"pp": [], "tg": [], "tgd": []}
        loaded = set()
        info = {}
        for rd in rounds:
            r = {}
            for fname in (f"llama-{v}.jsonl", f"llama-{v}-depth.jsonl"):
                path = os.path.join(rd, fname)
                if os.path.exists(path):
                    r.update({k: val for k, val in read_llama(path).items() if val is not None})
            samples["pp"].append(r.get("pp"))
            samples["tg"].append(r.get("tg"))
            samples["tgd"].append(r.get("tg_depth"))
            p_tokens = r.get("prompt_tokens", p_tokens)
            g_tokens = r.get("gen_tokens", g_tokens)
            depth = r.get("depth", depth)
            info = info or r
            name = read_loaded_variant(os.path.join(rd, f"llama-{v}.err"))
            if name:
                loaded.add(name)
        loaded_name = ",".join(sorted(loaded)) or "?"
        how = "its own choice" if v == "auto" else "pinned"
        engines.append((f"llama.cpp, {loaded_name} ({how})", samples,
                        {"variant": v, "loaded": loaded_name, "build_commit": info.get("build_commit")}))
    ch = {"pp": [], "tg": [], "tgd": []}
    ch_info = {}
    for rd in rounds:
        r = read_last_json(os.path.join(rd, "channel.json"))
        ch["pp"].append(r.get("prefill_tok_s"))
        ch["tg"].append(r.get("decode_tok_s"))
        ch["tgd"].append(r.get("decode_full_ring_tok_s"))
        ch_info = r
        p_tokens = p_tokens or r.get("prompt_tokens")
        g_tokens = g_tokens or r.get("gen_tokens")
    ch_label = f"Channel ({ch_info.get('backend', 'cpu')} backend)"

    cpu, flags = cpu_model()
    amx = any(f.startswith("amx") for f in flags)
    med = lambda s, k: median_or_none(s[k])  # noqa: E731
    ring_depth = ch_info.get("full_ring_depth")

    out = []
    out.append(f"compare-llamacpp: {a.label}: {w['architecture']}, {w['layers']} layers, "
               f"{w['file_bytes'] / 2**20:.1f} MiB file; {a.threads} threads on both engines; "
               f"median of {a.rounds} interleaved round{'s' if a.rounds != 1 else ''}")
    out.append(f"machine: {cpu}, {os.cpu_count()} CPUs{' (AMX)' if amx else ''}; load average before "
               f"{a.load_before or '?'}, after {a.load_after or '?'}")
    noise = read_noise(os.path.join(a.workdir, "noise.txt"))
    kept = [n for n in noise if n[3]]
    if kept:
        total_s = sum(n[1] for n in kept)
        mean = sum(n[1] * n[2] for n in kept) / total_s if total_s else 0.0
        worst = max(kept, key=lambda n: n[2])
        redone = len(noise) - len(kept)
        out.append(f"other processes during the kept runs: {mean:.2f} CPUs on average, at most {worst[2]:.2f} "
                   f"({worst[0]}); from /proc/stat less this script's children, steal included"
                   + (f"; {redone} disturbed run{'s' if redone != 1 else ''} done again" if redone else ""))
        if worst[2] >= 0.1 * (os.cpu_count() or 1):
            out.append("warning: the machine was not quiet; runs that shared it are slower than they would be, "
                       "llama.cpp's (its thread pool spins at barriers) more than Channel's")
    out.append(f"peer: {a.peer}")
    low = min(r["read_gb_s"] for r in bandwidths)
    out.append(f"read bandwidth: {bw['read_gb_s']:.2f} GB/s ({bw['threads']} threads, {bw['streams']} streams "
               f"per thread; best of {len(bandwidths)} measurements, lowest {low:.2f})")
    out.append(f"weights read per decoded token: {w['weight_bytes_per_token'] / 1e9:.3f} GB (layers "
               f"{w['layer_bytes'] / 1e9:.3f} GB + {w['output_tensor']} {w['output_type']} "
               f"{w['output_bytes'] / 1e9:.3f} GB)")
    out.append(f"decode ceiling: {bw['read_gb_s']:.2f} GB/s / {w['weight_bytes_per_token'] / 1e9:.3f} GB = "
               f"{ceiling:.1f} tok/s")
    out.append("")
    dlabel = f"decode tg{g_tokens} @ d{depth or 3968}"
    if ring_depth:
        dlabel += " (Channel: ring full)"
    with_depth = any(med(s, "tgd") for _, s, _ in engines + [(ch_label, ch, {})])
    head = ["engine", f"prefill pp{p_tokens} tok/s", f"decode tg{g_tokens} tok/s"]
    head += [dlabel + " tok/s"] if with_depth else []
    head += ["decode / ceiling"]
    rows = []
    for label, s, _ in engines + [(ch_label, ch, {})]:
        tg = med(s, "tg")
        rows.append([label, fmt_rate(med(s, "pp")), fmt_rate(tg)] + ([fmt_rate(med(s, "tgd"))] if with_depth else [])
                    + [f"{100 * tg / ceiling:.0f}%" if tg else "-"])
    for label, s, extra in engines:
        def ratio(k):
            c, l = med(ch, k), med(s, k)
            return f"{c / l:.2f}x" if c and l else "-"
        rows.append([f"Channel / llama.cpp {extra['loaded']}", ratio("pp"), ratio("tg")]
                    + ([ratio("tgd")] if with_depth else []) + [""])
    rows.append(["decode ceiling (read bandwidth / weight bytes)", "", fmt_rate(ceiling)]
                + ([""] if with_depth else []) + ["100%"])
    widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
    line = lambda cells: "| " + " | ".join(  # noqa: E731
        str(c).ljust(widths[i]) if i == 0 else str(c).rjust(widths[i]) for i, c in enumerate(cells)) + " |"
    out.append(line(head))
    out.append("|" + "|".join("-" * (w_ + 1) + (":" if i else "-") for i, w_ in enumerate(widths)) + "|")
    out.extend(line(r) for r in rows)
    if a.rounds > 1:
        out.append("")
        out.append("spread over rounds (min-max, tok/s):")
        for label, s, _ in engines + [(ch_label, ch, {})]:
            out.append(f"  {label}: prefill {spread(s['pp']) or '-'}, decode {spread(s['tg']) or '-'}, "
                       f"decode at depth {spread(s['tgd']) or '-'}")
    if amx and all(e[2]["loaded"] == "sapphirerapids" for e in engines):
        out.append("")
        out.append("note: llama.cpp ran its AMX variant (sapphirerapids); compare with its non-AMX variant too: "
                   "--peer-variant auto,zen4")
    if a.command:
        out.append("")
        out.append("command: " + a.command)
    print("\n".join(out))

    if a.json_out:
        doc = {
            "label": a.label, "model": a.model, "threads": a.threads, "rounds": a.rounds,
            "prompt_tokens": p_tokens, "gen_tokens": g_tokens, "depth": depth, "channel_full_ring_depth": ring_depth,
            "cpu": cpu, "amx": amx, "peer": a.peer, "load_before": a.load_before, "load_after": a.load_after,
            "weights": w, "bandwidth": bw, "bandwidth_runs": bandwidths, "decode_ceiling_tok_s": ceiling,
            "llama": [dict(extra, samples=s, median={k: med(s, k) for k in s}) for _, s, extra in engines],
            "channel": {"samples": ch, "median": {k: med(ch, k) for k in ch}, "backend": ch_info.get("backend")},
            "other_cpus_during_runs": [{"run": n, "seconds": t, "other_cpus": c, "kept": k} for n, t, c, k in noise],
            "command": a.command,
        }
        with open(a.json_out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    cmd, rest = argv[1], argv[2:]
    try:
        if cmd == "weights" and len(rest) == 1:
            print(json.dumps(weights(rest[0])))
        elif cmd == "round-summary" and rest:
            round_summary(rest)
        elif cmd == "report":
            report(rest)
        else:
            print(__doc__.strip(), file=sys.stderr)
            return 2
    except (OSError, ValueError, KeyError) as e:
        print(f"compare_report.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
