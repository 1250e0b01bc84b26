"""The main job: train a small MLP on the openreg device and check it against the CPU.

Run through `bash scripts/demo.sh`. Only `import torch` is needed: the openreg backend
is autoloaded. The same seed drives both runs, so the two trainings must agree.
"""

import argparse
import time

import torch
from torch import nn


def make_data(samples: int, features: int, generator: torch.Generator):
    """A noisy nonlinear regression problem, generated on the CPU."""
    inputs = torch.randn(samples, features, generator=generator)
    weights = torch.randn(features, 1, generator=generator) / features**0.5
    targets = torch.sin(inputs @ weights) + 0.1 * torch.randn(samples, 1, generator=generator)
    return inputs, targets


def make_model(features: int) -> nn.Module:
    return nn.Sequential(
        nn.Linear(features, 128), nn.ReLU(), nn.Linear(128, 64), nn.Tanh(), nn.Linear(64, 1)
    )


def train(device: str, inputs, targets, steps: int, batch: int, log_every: int):
    torch.manual_seed(0)  # seeds the CPU and every openreg device alike
    model = make_model(inputs.shape[1]).to(device)
    # Initialisation drew from the CPU generator only: reseed so that batch sampling
    # starts from the same state on either device (each device has its own generator).
    torch.manual_seed(1)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    inputs, targets = inputs.to(device), targets.to(device)
    losses = []
    start = time.perf_counter()
    for step in range(steps):
        # Batches drawn on the device by its own generator: CPU-identical numbers.
        index = torch.randint(0, inputs.shape[0], (batch,), device=device)
        loss = nn.functional.mse_loss(model(inputs[index]), targets[index])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % log_every == 0 or step == steps - 1:
            losses.append((step, loss.item()))
    elapsed = time.perf_counter() - start
    return model, losses, elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()

    print(f"torch {torch.__version__}; accelerator: {torch.accelerator.current_accelerator()}")
    for index in range(torch.openreg.device_count()):
        props = torch.openreg.get_device_properties(index)
        print(f"  openreg:{index}: {props.name}, {props.total_memory / 2**30:.1f} GiB")

    inputs, targets = make_data(4096, 32, torch.Generator().manual_seed(1))
    device_model, device_losses, device_time = train(
        "openreg", inputs, targets, args.steps, args.batch, log_every=50)
    cpu_model, cpu_losses, cpu_time = train(
        "cpu", inputs, targets, args.steps, args.batch, log_every=50)

    print("\nstep   loss (openreg)   loss (cpu)")
    for (step, device_loss), (_, cpu_loss) in zip(device_losses, cpu_losses):
        print(f"{step:4d}   {device_loss:14.6f}   {cpu_loss:10.6f}")

    largest = 0.0
    for (name, device_param), cpu_param in zip(device_model.named_parameters(),
                                               cpu_model.parameters()):
        torch.testing.assert_close(device_param.cpu(), cpu_param, msg=f"{name} differs")
        largest = max(largest, (device_param.cpu() - cpu_param).abs().max().item())
    first, last = device_losses[0][1], device_losses[-1][1]
    assert last < first / 2, f"loss did not go down enough: {first:.4f} -> {last:.4f}"

    print(f"\nloss {first:.4f} -> {last:.4f}; parameters match CPU (max |diff| {largest:.2e})")
    print(f"time: openreg {device_time:.2f} s, cpu {cpu_time:.2f} s "
          f"(ratio {device_time / cpu_time:.2f})")
    stats = torch.openreg.memory_stats()
    print(f"openreg:0 memory: allocated {torch.openreg.memory_allocated() / 2**20:.2f} MiB, "
          f"peak {torch.openreg.max_memory_allocated() / 2**20:.2f} MiB, "
          f"reserved {torch.openreg.memory_reserved() / 2**20:.2f} MiB, "
          f"{stats.get('num_device_alloc', 0)} device allocations for "
          f"{stats.get('allocation.all.allocated', 0)} tensor allocations")


if __name__ == "__main__":
    main()
