"""A Hugging Face ``transformers`` Trainer, as most training runs today: a tiny GPT-2 built from a config
(no download), a map-style dataset of token ids of varied lengths, a padding collator, loader workers.

Run as it is (``benchy run -- python hf_trainer.py``): the Trainer builds its DataLoader itself and
Accelerate prepares it. ``--max_steps`` bounds the run by steps instead of epochs; ``--accum`` is the
gradient accumulation; ``--group`` uses the Trainer's length-grouped sampler. Each epoch prints
``USER::epoch E steps S len L`` (the optimizer steps the Trainer took that epoch, and its loader's len()).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import warnings

import torch
from torch.utils.data import Dataset

warnings.filterwarnings("ignore")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402


class Tokens(Dataset):
    """Token ids of 8 to 31 tokens, made once from a seed."""

    def __init__(self, n: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.data = [torch.randint(0, 256, (int(k),), generator=g) for k in torch.randint(8, 32, (n,), generator=g)]

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, i: int):
        return {"input_ids": self.data[i]}


def pad(items):
    """The padding collator: ids padded with 0, an attention mask, labels -100 where padded."""
    n = max(len(x["input_ids"]) for x in items)
    ids = torch.zeros(len(items), n, dtype=torch.long)
    mask = torch.zeros(len(items), n, dtype=torch.long)
    for k, x in enumerate(items):
        ids[k, : len(x["input_ids"])] = x["input_ids"]
        mask[k, : len(x["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


class Epochs(TrainerCallback):
    """Says each epoch's optimizer steps and the training loader's len() (the Trainer's own epochs)."""

    def __init__(self) -> None:
        self.last = 0

    def on_epoch_end(self, args, state, control, train_dataloader=None, **kwargs):
        length = len(train_dataloader) if train_dataloader is not None else -1
        print(f"USER::epoch {round(state.epoch or 0) - 1} steps {state.global_step - self.last} len {length}", flush=True)
        self.last = state.global_step


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--samples", type=int, default=192)
    p.add_argument("--batch_size", type=int, default=8)
    p.add_argument("--epochs", type=float, default=30)
    p.add_argument("--max_steps", type=int, default=-1)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--group", action="store_true", help="the Trainer's length-grouped sampler")
    args = p.parse_args()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=256, n_positions=64, n_embd=32, n_layer=2, n_head=2))
    training = TrainingArguments(
        output_dir=tempfile.mkdtemp(),
        per_device_train_batch_size=args.batch_size,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        dataloader_num_workers=args.workers,
        gradient_accumulation_steps=args.accum,
        train_sampling_strategy="group_by_length" if args.group else "random",
        report_to=[],
        save_strategy="no",
        logging_strategy="no",
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer = Trainer(model=model, args=training, train_dataset=Tokens(args.samples), data_collator=pad, callbacks=[Epochs()])
    trainer.train()
    print("USER::done", flush=True)


if __name__ == "__main__":
    main()
