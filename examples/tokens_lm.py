"""A small language model trained on generated sequences of different lengths, padded per batch.

    python examples/tokens_lm.py --enable_benchy --benchy_count tokens
    python examples/tokens_lm.py --enable_benchy --benchy_count tokens --group_by_length

Each batch is a Hugging Face-style dict (``input_ids``, ``attention_mask``, ``labels``) padded to
its longest sequence, so part of every batch is padding. With ``--benchy_count tokens`` benchy also
prints tokens per second of each mode and the padding share (the TOKENS line); ``--group_by_length``
batches sequences of similar lengths together (a length-grouped sampler), which cuts the padding.

The task is learnable: each sequence counts up from a random start (modulo the vocabulary) with a
few random tokens mixed in, and the model predicts the next token.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from typing import Dict, Iterator, List

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, Sampler

import benchy

SHORT = {
    "IO": {"ntrials": 3, "nbatches": 30},
    "synthetic": {"ntrials": 3, "nwarmup": 1, "nbatches": 30},
    "full": {"ntrials": 3, "nwarmup": 1, "nbatches": 30},
}


class CountingSequences(Dataset):
    """Sequences of 8 to ``max_len`` tokens that count up from a random start, with 10 % noise."""

    def __init__(self, size: int = 4096, vocab: int = 512, max_len: int = 128, seed: int = 0) -> None:
        rng = random.Random(seed)
        self.lengths = [rng.randint(8, max_len) for _ in range(size)]
        self.vocab, self.seed = vocab, seed

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> torch.Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        n = self.lengths[index]
        start = int(torch.randint(1, self.vocab, (1,), generator=g))
        seq = (start + torch.arange(n)) % (self.vocab - 1) + 1  # 0 is the padding id
        noise = torch.rand(n, generator=g) < 0.1
        seq[noise] = torch.randint(1, self.vocab, (int(noise.sum()),), generator=g)
        return seq


def pad_batch(items: List[torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Pad to the batch's longest sequence: the dict a Hugging Face collator makes."""
    longest = max(len(x) for x in items)
    ids = torch.zeros(len(items), longest, dtype=torch.long)
    mask = torch.zeros(len(items), longest, dtype=torch.long)
    for i, x in enumerate(items):
        ids[i, : len(x)] = x
        mask[i, : len(x)] = 1
    labels = ids.masked_fill(mask == 0, -100)
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


class LengthGrouped(Sampler[int]):
    """Shuffled batches of sequences of similar lengths (what ``group_by_length`` does in HF's Trainer)."""

    def __init__(self, lengths: List[int], batch_size: int, seed: int = 0) -> None:
        self.lengths, self.batch_size, self.epoch, self.seed = lengths, batch_size, 0, seed

    def __len__(self) -> int:
        return len(self.lengths)

    def __iter__(self) -> Iterator[int]:
        rng = random.Random(self.seed + self.epoch)
        self.epoch += 1
        order = list(range(len(self.lengths)))
        rng.shuffle(order)
        chunk = self.batch_size * 50  # sort within large chunks, then shuffle the batches
        out: List[List[int]] = []
        for c in range(0, len(order), chunk):
            part = sorted(order[c : c + chunk], key=lambda i: self.lengths[i])
            out += [part[b : b + self.batch_size] for b in range(0, len(part), self.batch_size)]
        rng.shuffle(out)
        return iter([i for batch in out for i in batch])


class TinyLM(nn.Module):
    def __init__(self, vocab: int = 512, width: int = 64, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Embedding(1024, width)
        layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True, dropout=0.0)
        self.blocks = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, vocab)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        n = ids.shape[1]
        x = self.embed(ids) + self.position(torch.arange(n, device=ids.device))
        causal = nn.Transformer.generate_square_subsequent_mask(n, device=ids.device)
        x = self.blocks(x, mask=causal, src_key_padding_mask=mask == 0, is_causal=True)
        return self.head(x)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num_epochs", type=int, default=None)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--num_workers", type=int, default=0)
    parser.add_argument("--group_by_length", action="store_true")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    benchy.add_arguments(parser)  # --enable_benchy, --benchy_config, --benchy_count
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device(args.device)
    data = CountingSequences()
    model = TinyLM().to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    order = dict(sampler=LengthGrouped(data.lengths, args.batch_size)) if args.group_by_length else dict(shuffle=True)
    loader = benchy.data_loader(
        args,
        data,
        batch_size=args.batch_size,
        collate_fn=pad_batch,
        num_workers=args.num_workers,
        drop_last=True,
        benchy_config=args.benchy_config or os.environ.get(benchy.CONFIG_ENV_VAR) or SHORT,
        **order,
    )
    num_epochs = args.num_epochs or 3
    if args.num_epochs is None and isinstance(loader, benchy.BenchmarkDataLoader):
        num_epochs = max(num_epochs, loader.benchy.epochs_needed() or 1)

    for epoch in range(num_epochs):
        start, tokens, loss_sum, steps = time.perf_counter(), 0, 0.0, 0
        for batch in loader:
            ids = batch["input_ids"].to(device)
            mask = batch["attention_mask"].to(device)
            labels = batch["labels"].to(device)
            logits = model(ids, mask)
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            tokens += int(mask.sum())
            loss_sum += float(loss)
            steps += 1
        elapsed = time.perf_counter() - start
        print(f"epoch {epoch}: {steps} steps, loss {loss_sum / max(steps, 1):.3f}, {tokens / elapsed:.0f} tokens/s", flush=True)


if __name__ == "__main__":
    main()
