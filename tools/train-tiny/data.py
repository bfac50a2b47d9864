"""Training data: conversations from corpus.py, tokenized with the corpus vocabulary, packed
into rows of a fixed length. Each token carries its document number (attention stays inside a
conversation), its position in the conversation (RoPE restarts at 0, as in the engine) and
whether it is trained (what the model writes, not what the engine renders around input)."""

import json
import multiprocessing

import numpy as np

import corpus
import vocab

_tokenizer = None


def _init(vocab_path):
    global _tokenizer
    with open(vocab_path) as f:
        _tokenizer = vocab.Tokenizer(json.load(f))


def _encode_range(job):
    seed, start, count, split = job
    out = []
    for i in range(start, start + count):
        ids, trained = [_tokenizer.bos], [False]
        for text, is_model in corpus.conversation(seed, i, split):
            piece = _tokenizer.encode(text)
            ids += piece
            trained += [is_model] * len(piece)
        out.append((np.array(ids, dtype=np.int32), np.array(trained, dtype=bool)))
    return out


def encode_conversations(vocab_path, seed, count, split="train", workers=None):
    """Tokenized conversations [(ids, trained)], made by `workers` processes."""
    chunk = 2000
    jobs = [(seed, s, min(chunk, count - s), split) for s in range(0, count, chunk)]
    with multiprocessing.Pool(workers, initializer=_init, initargs=(vocab_path,)) as pool:
        return [c for part in pool.map(_encode_range, jobs) for c in part]


def pack(conversations, seq_len, pad_id, rng):
    """Rows of seq_len tokens, conversations in a shuffled order, each whole in one row
    (conversations longer than a row are cut): arrays tokens, positions, doc and target weight
    (1 where the next token is in the same conversation and trained)."""
    order = rng.permutation(len(conversations))
    ids = [conversations[i][0][:seq_len] for i in order]
    trained = [conversations[i][1][:seq_len] for i in order]
    lengths = np.array([len(x) for x in ids], dtype=np.int64)
    # Greedy: a conversation that does not fit the rest of the row starts the next row.
    dest = np.empty(len(ids), dtype=np.int64)
    row, used = 0, 0
    for k, n in enumerate(lengths.tolist()):
        if used + n > seq_len:
            row, used = row + 1, 0
        dest[k] = row * seq_len + used
        used += n
    n_rows = row + 1
    src = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    within = (np.arange(lengths.sum()) - np.repeat(src, lengths)).astype(np.int32)
    where = np.repeat(dest, lengths) + within
    flat_ids = np.concatenate(ids)
    flat_trained = np.concatenate(trained)
    # Position t predicts token t + 1: its weight is the next token's, and 0 at a conversation's end.
    next_trained = np.zeros_like(flat_trained)
    next_trained[:-1] = flat_trained[1:]
    next_trained[src + lengths - 1] = False
    # int32 halves the memory traffic here; the trainer widens on the device.
    tokens = np.full(n_rows * seq_len, pad_id, dtype=np.int32)
    positions = np.zeros(n_rows * seq_len, dtype=np.int32)
    doc = np.full(n_rows * seq_len, -1, dtype=np.int32)
    weight = np.zeros(n_rows * seq_len, dtype=np.float32)
    tokens[where] = flat_ids
    positions[where] = within
    doc[where] = np.repeat(np.arange(len(ids), dtype=np.int32), lengths)
    weight[where] = next_trained
    shape = (n_rows, seq_len)
    return tokens.reshape(shape), positions.reshape(shape), doc.reshape(shape), weight.reshape(shape)
