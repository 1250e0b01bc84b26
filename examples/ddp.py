"""Data-parallel training on two openreg devices, checked against one process on the CPU.

    torchrun --standalone --nproc-per-node=2 examples/ddp.py [--steps N]

Each process trains on its own openreg device (openreg:LOCAL_RANK) with
DistributedDataParallel over openreg's "orccl" backend (gloo underneath). With equal
shards and a mean loss, the gradient DDP averages over the processes is the gradient of
the whole batch, so rank 0 then trains the same model on the whole data alone, on the
CPU, and checks that both runs end with the same parameters. Only `import torch` is
needed: openreg is autoloaded.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def make_data(samples: int, features: int):
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(samples, features, generator=generator)
    targets = torch.sin(inputs.sum(dim=1, keepdim=True))
    return inputs, targets


def make_model(features: int) -> nn.Module:
    torch.manual_seed(0)  # every process (and the CPU check) starts from the same weights
    return nn.Sequential(nn.Linear(features, 64), nn.ReLU(), nn.Linear(64, 1))


def train(model, inputs, targets, steps: int, batch: int):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    device = next(model.parameters()).device
    for step in range(steps):
        start = (step * batch) % len(inputs)
        x = inputs[start:start + batch].to(device)
        y = targets[start:start + batch].to(device)
        loss = nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--batch", type=int, default=32, help="per process")
    args = parser.parse_args()

    local_rank = int(os.environ["LOCAL_RANK"])
    device = torch.device("openreg", local_rank)
    torch.openreg.set_device(device)
    # device_id picks openreg's default backend ("orccl") and binds the group to the device.
    dist.init_process_group(device_id=device)
    rank, world = dist.get_rank(), dist.get_world_size()

    features = 8
    inputs, targets = make_data(args.batch * world * args.steps, features)
    # This process's shard: every world-th sample, so that the shards of one step make
    # up one contiguous batch of the whole data.
    shard = slice(rank, None, world)
    model = DistributedDataParallel(make_model(features).to(device))
    loss = train(model, inputs[shard], targets[shard], args.steps, args.batch)
    print(f"rank {rank} on {device}: final loss {loss:.5f}")

    if rank == 0:
        # Step s of the processes together used samples [s * batch * world, (s + 1) * ...).
        reference = make_model(features)
        train(reference, inputs, targets, args.steps, args.batch * world)
        for ours, theirs in zip(model.module.parameters(), reference.parameters()):
            torch.testing.assert_close(ours.detach().cpu(), theirs.detach(), rtol=1e-4, atol=1e-5)
        print(f"DDP on {world} openreg devices matches one CPU process")
    # Finish together: the other ranks wait while rank 0 checks against the CPU.
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
