"""Profile a few training steps on openreg with torch.profiler, as on a GPU.

    python examples/profile_training.py [--trace-dir DIR] [--steps N]

A small MLP trains on openreg:0 while torch.profiler records the CPU operators and the
device activity openreg reports (ProfilerActivity.PrivateUse1): every kernel, copy and
fill, with its start and end taken on the stream that ran it. The profiler follows a
schedule (one step skipped, one warm-up step, two recorded) and hands each recorded
cycle to tensorboard_trace_handler, which writes a Chrome/TensorBoard trace into
--trace-dir. The script then prints the operators that spent the most device time.
Only `import torch` is needed: openreg is autoloaded.
"""

import argparse
import tempfile

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def train(steps: int, trace_dir: str) -> profile:
    device = torch.device("openreg", 0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 1)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    inputs, targets = torch.randn(256, 64), torch.randn(256, 1)
    side_stream = torch.openreg.Stream()

    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.PrivateUse1],
        schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(trace_dir),
    ) as prof:
        for _ in range(steps):
            with record_function("train_step"):
                x, y = inputs.to(device), targets.to(device)  # host-to-device copies
                optimizer.zero_grad()
                loss = nn.functional.mse_loss(model(x), y)
                loss.backward()
                optimizer.step()
            # Some work on a second stream: it gets a lane of its own in the trace.
            with torch.openreg.stream(side_stream):
                norms = torch.stack([p.detach().norm() for p in model.parameters()])
            torch.openreg.current_stream().wait_stream(side_stream)
            print(f"loss {loss.item():.4f}  parameter norms {norms.cpu().tolist()}")
            prof.step()
    return prof


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace-dir", default=None, help="where traces go (default: a temp dir)")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    trace_dir = args.trace_dir or tempfile.mkdtemp(prefix="openreg-profile-")
    prof = train(args.steps, trace_dir)
    print(prof.key_averages().table(sort_by="device_time_total", row_limit=12))
    print(f"trace written to {trace_dir} (open it in chrome://tracing, Perfetto or TensorBoard)")


if __name__ == "__main__":
    main()
