"""SyncBatchNorm's batch-norm pieces (CUDA-only operators with openreg kernels): one batch
split in two "ranks" and combined as SyncBatchNorm combines it gives what one CPU
BatchNorm gives over the whole batch, forward, backward and running statistics. The
two-process run under DDP is in test_distributed.py."""

import pytest
import torch
import torch.nn.functional as F

DEV = "openreg"


def sync_batch_norm_in_two_parts(x, weight, bias, grad, running_mean, running_var):
    parts, grads = (x[:3], x[3:]), (grad[:3], grad[3:])
    stats = [torch.batch_norm_stats(part.to(DEV), 1e-5) for part in parts]
    per_channel = x[0, 0].numel()
    counts = torch.tensor([len(p) * per_channel for p in parts], dtype=stats[0][0].dtype,
                          device=DEV)
    mean, invstd = torch.batch_norm_gather_stats_with_counts(
        x.to(DEV), torch.stack([s[0] for s in stats]), torch.stack([s[1] for s in stats]),
        running_mean, running_var, 0.1, 1e-5, counts)
    out = torch.cat([torch.batch_norm_elemt(p.to(DEV), weight.to(DEV), bias.to(DEV), mean,
                                            invstd, 1e-5) for p in parts])
    reduced = [torch.batch_norm_backward_reduce(g.to(DEV), p.to(DEV), mean, invstd,
                                                weight.to(DEV), True, True, True)
               for g, p in zip(grads, parts)]
    sum_dy, sum_dy_xmu = sum(r[0] for r in reduced), sum(r[1] for r in reduced)
    count = counts.to(torch.int32)
    grad_input = torch.cat([
        torch.batch_norm_backward_elemt(g.to(DEV), p.to(DEV), mean, invstd, weight.to(DEV),
                                        sum_dy, sum_dy_xmu, count)
        for g, p in zip(grads, parts)])
    return out, grad_input, sum(r[2] for r in reduced), sum(r[3] for r in reduced), mean


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last],
                         ids=["contiguous", "channels_last"])
def test_two_part_sync_batch_norm_equals_one_cpu_batch_norm(memory_format):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(8, 3, 5, 5, dtype=torch.float64, generator=generator)
    x = x.contiguous(memory_format=memory_format)
    weight, bias = torch.randn(3, dtype=torch.float64), torch.randn(3, dtype=torch.float64)
    grad = torch.randn(x.shape, dtype=torch.float64, generator=generator)
    running_mean = torch.zeros(3, dtype=torch.float64, device=DEV)
    running_var = torch.ones(3, dtype=torch.float64, device=DEV)
    out, grad_input, grad_weight, grad_bias, _ = sync_batch_norm_in_two_parts(
        x, weight, bias, grad, running_mean, running_var)

    leaves = [t.clone().requires_grad_() for t in (x, weight, bias)]
    cpu_mean, cpu_var = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    expected = F.batch_norm(leaves[0], cpu_mean, cpu_var, leaves[1], leaves[2], training=True,
                            momentum=0.1, eps=1e-5)
    expected.backward(grad)
    torch.testing.assert_close(out.cpu(), expected.detach())
    torch.testing.assert_close(running_mean.cpu(), cpu_mean)
    torch.testing.assert_close(running_var.cpu(), cpu_var)
    torch.testing.assert_close([grad_input.cpu(), grad_weight.cpu(), grad_bias.cpu()],
                               [leaf.grad for leaf in leaves])


def test_half_inputs_keep_float_statistics_as_cuda_does():
    x = torch.randn(4, 2, 3, generator=torch.Generator().manual_seed(1)).half()
    mean, invstd = torch.batch_norm_stats(x.to(DEV), 1e-5)
    assert mean.dtype == invstd.dtype == torch.float32
    torch.testing.assert_close(mean.cpu(), x.float().mean((0, 2)))
    out = torch.batch_norm_elemt(x.to(DEV), None, None, mean, invstd, 1e-5)
    assert out.dtype == torch.float16
    expected = F.batch_norm(x.float(), None, None, training=True, eps=1e-5).half()
    torch.testing.assert_close(out.cpu(), expected)


def test_inputs_without_channels_are_refused():
    with pytest.raises(RuntimeError, match="batch_norm_stats: expected an input with a channel"):
        torch.batch_norm_stats(torch.ones(4, device=DEV), 1e-5)
