"""Hogwild-style training on openreg: one model whose parameters live in device memory
shared by several processes, each running SGD on it at the same time without locks (as
PyTorch's mnist_hogwild example does on CUDA).

    python examples/hogwild.py [--processes 2] [--steps 200]

The parameters are sent to each spawned process as openreg tensors: they arrive as the
same device memory, so every optimizer step of any process updates the one model.
"""

import argparse

import torch
import torch.multiprocessing as mp
import torch.nn.functional as F

FEATURES = 8


def make_data(seed: int, n: int = 512):
    """A linear regression problem (the same true weights for every process)."""
    true_weight = torch.linspace(-1.0, 1.0, FEATURES)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(n, FEATURES, generator=generator)
    y = x @ true_weight + 0.5 + 0.01 * torch.randn(n, generator=generator)
    return x.to("openreg"), y.unsqueeze(1).to("openreg")


def train(rank: int, model: torch.nn.Module, steps: int, done) -> None:
    x, y = make_data(seed=rank + 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(steps):
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()  # in place, in the shared device memory
    torch.openreg.synchronize()
    done.put(rank)


def loss_of(model: torch.nn.Module) -> float:
    x, y = make_data(seed=0)
    with torch.no_grad():
        return F.mse_loss(model(x), y).item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = torch.nn.Linear(FEATURES, 1).to("openreg")
    model.share_memory()  # a no-op for device memory; kept as CUDA code has it
    before = loss_of(model)
    initial = model.weight.detach().cpu().clone()

    ctx = mp.get_context("spawn")
    done = ctx.Queue()
    workers = [ctx.Process(target=train, args=(rank, model, args.steps, done))
               for rank in range(args.processes)]
    for worker in workers:
        worker.start()
    finished = sorted(done.get(timeout=300) for _ in workers)
    for worker in workers:
        worker.join(timeout=60)
        if worker.exitcode != 0:
            raise SystemExit(f"worker {worker.pid} failed with exit code {worker.exitcode}")

    after = loss_of(model)
    moved = (model.weight.detach().cpu() - initial).abs().max().item()
    print(f"workers {finished} done; loss {before:.4f} -> {after:.4f}; "
          f"largest weight change {moved:.3f}")


if __name__ == "__main__":
    main()
