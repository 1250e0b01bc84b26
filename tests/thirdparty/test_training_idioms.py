"""Plain-PyTorch training code as popular codebases write it, on openreg versus the CPU.

Each idiom is written device-agnostically (`device = torch.device(...)`, `.to(device)`) the
way nanoGPT, torchvision's references and pytorch/examples write it, then run once with
device "cpu" and once with "openreg" from the same seed; losses, parameters and buffers
must agree (tolerances: see thirdparty_compare).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import math
from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint, checkpoint_sequential
from torch.utils.data import DataLoader, TensorDataset

from thirdparty_compare import DEVICE, assert_same_state, assert_same_tensor

# --------------------------------------------------------------------------------------
# nanoGPT (github.com/karpathy/nanoGPT, model.py and train.py), shrunk.


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    n_embd: int = 32
    dropout: float = 0.0  # nanoGPT's default for pretraining
    bias: bool = True
    tie_weights: bool = True  # nanoGPT always ties; False isolates the .to() defect


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's has no bias=False before 2.1)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head, self.n_embd, self.dropout = config.n_head, config.n_embd, config.dropout

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=True,
                                           dropout_p=self.dropout if self.training else 0)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        if config.tie_weights:
            self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        x = self.transformer.drop(self.transformer.wte(idx) + self.transformer.wpe(pos))
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()  # fused=None elsewhere
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            block_size = self.config.block_size
            idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


def nanogpt_train(device, tie_weights, iters=4, compile=False):
    """nanoGPT's train.py loop: warmup + cosine LR, gradient accumulation, GradScaler
    (disabled in float32), clip_grad_norm_ after unscale_, periodic no_grad evaluation."""
    device_type = "cuda" if "cuda" in str(device) else str(device).split(":")[0]
    gradient_accumulation_steps, batch_size, block_size = 2, 4, 16
    learning_rate, min_lr, warmup_iters, lr_decay_iters = 6e-4, 6e-5, 2, iters
    data = torch.randint(0, 64, (2000,), generator=torch.Generator().manual_seed(5))

    def get_batch():
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([data[i:i + block_size] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + block_size] for i in ix])
        if device_type != "cpu":  # nanoGPT: `if device_type == 'cuda'`
            x = x.pin_memory().to(device, non_blocking=True)
            y = y.pin_memory().to(device, non_blocking=True)
        return x, y

    def get_lr(it):
        if it < warmup_iters:
            return learning_rate * (it + 1) / (warmup_iters + 1)
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (learning_rate - min_lr)

    torch.manual_seed(1337)
    model = GPT(GPTConfig(tie_weights=tie_weights))
    model.to(device)
    scaler = torch.amp.GradScaler(device_type, enabled=False)
    optimizer = model.configure_optimizers(0.1, learning_rate, (0.9, 0.95), device_type)
    if compile:
        model = torch.compile(model, backend="aot_eager")

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        losses = torch.stack([model(*get_batch())[1] for _ in range(2)])
        model.train()
        return losses.mean()

    X, Y = get_batch()
    train_losses, eval_losses = [], []
    for it in range(iters):
        lr = get_lr(it)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if it % 2 == 0:
            eval_losses.append(estimate_loss())
        for micro_step in range(gradient_accumulation_steps):
            logits, loss = model(X, Y)
            loss = loss / gradient_accumulation_steps
            X, Y = get_batch()  # prefetch while the device works, as nanoGPT does
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        train_losses.append(loss.detach() * gradient_accumulation_steps)
    return model, torch.stack(train_losses), torch.stack(eval_losses)


@pytest.mark.parametrize("tie_weights", [True, False],
                         ids=["tied", "untied"])
def test_nanogpt_training_matches_cpu(tie_weights):
    cpu_model, cpu_train, cpu_eval = nanogpt_train(torch.device("cpu"), tie_weights)
    model, train_losses, eval_losses = nanogpt_train(DEVICE, tie_weights)
    assert_same_tensor(train_losses, cpu_train)
    assert_same_tensor(eval_losses, cpu_eval)
    assert_same_state(model, cpu_model)


def test_module_to_keeps_shared_parameters():
    # The smallest form of the defect: a shared Parameter must stay shared after .to().
    model = GPT(GPTConfig()).to(DEVICE)
    assert model.lm_head.weight is model.transformer.wte.weight


def test_nanogpt_sampling_matches_cpu():
    # Temperature + top-k sampling through torch.multinomial on each device's generator.
    torch.manual_seed(0)
    cpu_model = GPT(GPTConfig()).eval()  # values, not Parameter identity, matter here
    model = copy.deepcopy(cpu_model).to(DEVICE)
    start = torch.zeros((2, 1), dtype=torch.long)
    torch.manual_seed(42)
    expected = cpu_model.generate(start, 20, temperature=0.8, top_k=10)
    torch.manual_seed(42)
    actual = model.generate(start.to(DEVICE), 20, temperature=0.8, top_k=10)
    assert actual.tolist() == expected.tolist()


def test_compiled_nanogpt_matches_cpu():
    # torch.compile with the aot_eager backend: dynamo + AOTAutograd graphs of ATen ops.
    torch._dynamo.reset()
    cpu_model, cpu_train, cpu_eval = nanogpt_train(torch.device("cpu"), False, 2, compile=True)
    model, train_losses, eval_losses = nanogpt_train(DEVICE, False, 2, compile=True)
    assert_same_tensor(train_losses, cpu_train)
    assert_same_tensor(eval_losses, cpu_eval)
    assert_same_state(model, cpu_model)


# --------------------------------------------------------------------------------------
# A ResNet (torchvision.models.resnet's BasicBlock) trained like torchvision's reference
# classification script: SGD with Nesterov momentum, label smoothing, channels_last.


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, layers=(1, 1), num_classes=10, width=8):
        super().__init__()
        self.inplanes = width
        self.conv1 = nn.Conv2d(3, width, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(width, layers[0])
        self.layer2 = self._make_layer(width * 2, layers[1], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 2, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes))
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet_train(device, memory_format, steps=3, compile=False):
    torch.manual_seed(0)
    model = ResNet().to(device, memory_format=memory_format)
    if compile:
        model = torch.compile(model, backend="aot_eager")
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                                weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=steps)
    generator = torch.Generator().manual_seed(1)
    images = torch.randn(8, 3, 32, 32, generator=generator)
    targets = torch.randint(0, 10, (8,), generator=generator)
    model.train()
    for _ in range(steps):
        image = images.to(device, non_blocking=True).contiguous(memory_format=memory_format)
        output = model(image)
        loss = criterion(output, targets.to(device, non_blocking=True))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    model.eval()
    with torch.inference_mode():
        eval_output = model(images.to(device).contiguous(memory_format=memory_format))
    return model, eval_output


@pytest.mark.parametrize("memory_format", [torch.contiguous_format, torch.channels_last],
                         ids=["contiguous", "channels_last"])
def test_resnet_batchnorm_train_eval_matches_cpu(memory_format):
    cpu_model, cpu_output = resnet_train(torch.device("cpu"), memory_format)
    model, output = resnet_train(DEVICE, memory_format)
    # Running statistics and num_batches_tracked are buffers: compared too.
    assert_same_state(model, cpu_model)
    assert_same_tensor(output, cpu_output)


def test_compiled_resnet_matches_cpu():
    # torch.compile without attention: convolutions, BatchNorm in train and eval graphs.
    torch._dynamo.reset()
    cpu_model, cpu_output = resnet_train(torch.device("cpu"), torch.contiguous_format, 2, True)
    model, output = resnet_train(DEVICE, torch.contiguous_format, 2, True)
    assert_same_state(model, cpu_model)
    assert_same_tensor(output, cpu_output)


# --------------------------------------------------------------------------------------
# pytorch/examples word_language_model: an LSTM/GRU language model trained with truncated
# BPTT, hidden-state repackaging, clip_grad_norm_ and a hand-written SGD update.


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.2):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ["LSTM", "GRU"]:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        decoded = self.decoder(self.drop(output)).view(-1, self.ntoken)
        return F.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        if self.rnn_type == "LSTM":
            return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                    weight.new_zeros(self.nlayers, bsz, self.nhid))
        return weight.new_zeros(self.nlayers, bsz, self.nhid)


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def rnn_train(device, rnn_type, bptt=8, lr=20.0, clip=0.25):
    ntokens, batch_size = 50, 4
    corpus = torch.randint(0, ntokens, (4 * bptt * batch_size + 1,),
                           generator=torch.Generator().manual_seed(2))
    data = corpus[: (corpus.size(0) // batch_size) * batch_size]
    data = data.view(batch_size, -1).t().contiguous().to(device)  # batchify
    torch.manual_seed(0)
    model = RNNModel(rnn_type, ntokens, 16, 32, 2).to(device)
    torch.manual_seed(1)  # dropout then starts from the same state on either device
    criterion = nn.NLLLoss()
    model.train()
    hidden = model.init_hidden(batch_size)
    losses = []
    for i in range(0, data.size(0) - 1 - bptt, bptt):
        source, target = data[i:i + bptt], data[i + 1:i + 1 + bptt].reshape(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(source, hidden)
        loss = criterion(output, target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        losses.append(loss.detach())
    model.eval()
    with torch.no_grad():
        output, _ = model(data[:bptt], model.init_hidden(batch_size))
        eval_loss = criterion(output, data[1:bptt + 1].reshape(-1))
    return model, torch.stack(losses), eval_loss


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_TANH"])
def test_rnn_language_model_matches_cpu(rnn_type):
    cpu_model, cpu_losses, cpu_eval = rnn_train(torch.device("cpu"), rnn_type)
    model, losses, eval_loss = rnn_train(DEVICE, rnn_type)
    assert_same_tensor(losses, cpu_losses)
    assert_same_tensor(eval_loss, cpu_eval)
    assert_same_state(model, cpu_model)


def test_packed_bidirectional_gru_matches_cpu():
    # Variable-length batches through pack_padded_sequence (lengths stay on the CPU).
    def run(device):
        torch.manual_seed(0)
        embedding = nn.Embedding(30, 8, padding_idx=0).to(device)
        gru = nn.GRU(8, 16, batch_first=True, bidirectional=True).to(device)
        tokens = torch.randint(1, 30, (3, 7), generator=torch.Generator().manual_seed(1))
        lengths = torch.tensor([7, 5, 2])
        tokens[1, 5:] = 0
        tokens[2, 2:] = 0
        packed = nn.utils.rnn.pack_padded_sequence(embedding(tokens.to(device)), lengths,
                                                   batch_first=True, enforce_sorted=True)
        output, hidden = gru(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(output, batch_first=True)
        (padded.sum() + hidden.pow(2).sum()).backward()
        return padded, hidden, gru

    cpu_out, cpu_hidden, cpu_gru = run(torch.device("cpu"))
    out, hidden, gru = run(DEVICE)
    assert_same_tensor(out, cpu_out)
    assert_same_tensor(hidden, cpu_hidden)
    for p, cpu_p in zip(gru.parameters(), cpu_gru.parameters()):
        assert_same_tensor(p.grad, cpu_p.grad)


# --------------------------------------------------------------------------------------
# Mixed precision as in PyTorch's AMP recipe: autocast + GradScaler, unscale_ before
# clipping, a step skipped on inf gradients.


def amp_train(device, dtype, steps=4):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.LayerNorm(64), nn.Linear(64, 4))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scaler = torch.amp.GradScaler(device.type, init_scale=2.0**10, growth_interval=2)
    generator = torch.Generator().manual_seed(1)
    inputs = torch.randn(steps, 32, 16, generator=generator).to(device)
    targets = torch.randint(0, 4, (steps, 32), generator=generator).to(device)
    losses, scales = [], []
    for step in range(steps):
        with torch.autocast(device_type=device.type, dtype=dtype):
            output = model(inputs[step])
            assert output.dtype == dtype
            loss = F.cross_entropy(output, targets[step])
        assert loss.dtype == torch.float32
        scaler.scale(loss).backward()
        if step == 1:  # an overflow: the scaler must skip this step and halve the scale
            next(model.parameters()).grad.view(-1)[0] = float("inf")
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.detach())
        scales.append(scaler.get_scale())
    return model, torch.stack(losses), scales


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_autocast_gradscaler_matches_cpu(dtype):
    cpu_model, cpu_losses, cpu_scales = amp_train(torch.device("cpu"), dtype)
    model, losses, scales = amp_train(DEVICE, dtype)
    assert scales == cpu_scales  # growth and backoff happened at the same steps
    # openreg applies CUDA's autocast op lists, the CPU its own; for this model both run
    # linear in low precision and layer_norm/cross_entropy in float32, so the only
    # differences are roundings in the low-precision matmuls: one unit of the dtype.
    eps = torch.finfo(dtype).eps
    assert_same_tensor(losses, cpu_losses, rtol=eps, atol=eps)
    assert_same_state(model, cpu_model, rtol=eps, atol=eps)


# --------------------------------------------------------------------------------------
# DataLoader with pinned batches copied with non_blocking=True, as in every ImageNet script.


def loader_train(device, num_workers):
    generator = torch.Generator().manual_seed(0)
    dataset = TensorDataset(torch.randn(64, 10, generator=generator),
                            torch.randint(0, 3, (64,), generator=generator))
    loader = DataLoader(dataset, batch_size=16, shuffle=True, num_workers=num_workers,
                        pin_memory=True, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 3))
    model.to(device)
    # Initialisation drew from the CPU generator only: reseed so that dropout starts from
    # the same state on both devices (each device has its own generator, as CUDA does).
    torch.manual_seed(3)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for epoch in range(2):
        for x, y in loader:
            assert x.is_pinned() and y.is_pinned()
            x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            # An asynchronous copy back, read after the device is synchronised.
            losses.append(loss.detach().to("cpu", non_blocking=True))
    torch.accelerator.synchronize()
    return model, torch.stack(losses)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pinned_dataloader_training_matches_cpu(num_workers):
    cpu_model, cpu_losses = loader_train(torch.device("cpu"), num_workers)
    model, losses = loader_train(DEVICE, num_workers)
    torch.testing.assert_close(losses, cpu_losses)
    assert_same_state(model, cpu_model)


class PrefetchLoader:
    """timm's PrefetchLoader (apex's data_prefetcher): the next batch is copied and
    normalised on a side stream while the current one trains; the compute stream waits
    for it, and record_stream keeps the allocator from reusing its memory too early."""

    def __init__(self, loader, mean, std, device):
        self.loader, self.device = loader, device
        self.mean = torch.tensor([x * 255 for x in mean], device=device).view(1, 3, 1, 1)
        self.std = torch.tensor([x * 255 for x in std], device=device).view(1, 3, 1, 1)
        self.device_module = torch.get_device_module(device) if device.type != "cpu" else None

    def __iter__(self):
        stream = self.device_module.Stream() if self.device_module else None
        first = True
        for next_input, next_target in self.loader:
            with self.device_module.stream(stream) if stream else contextlib.nullcontext():
                next_input = next_input.to(device=self.device, non_blocking=True)
                next_target = next_target.to(device=self.device, non_blocking=True)
                next_input = next_input.float().sub_(self.mean).div_(self.std)
            if not first:
                yield input, target
            first = False
            if stream is not None:
                current = self.device_module.current_stream()
                current.wait_stream(stream)
                next_input.record_stream(current)
                next_target.record_stream(current)
            input, target = next_input, next_target
        yield input, target


def prefetch_train(device):
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (24, 3, 8, 8), dtype=torch.uint8, generator=generator)
    dataset = TensorDataset(images, torch.randint(0, 4, (24,), generator=generator))
    loader = DataLoader(dataset, batch_size=4, pin_memory=device.type != "cpu")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(144, 4))
    model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in PrefetchLoader(loader, (0.485, 0.456, 0.406), (0.229, 0.224, 0.225), device):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return model, torch.stack(losses)


def test_side_stream_prefetcher_matches_cpu():
    cpu_model, cpu_losses = prefetch_train(torch.device("cpu"))
    model, losses = prefetch_train(DEVICE)
    assert len(losses) == 6
    assert_same_tensor(losses, cpu_losses)
    assert_same_state(model, cpu_model)


# --------------------------------------------------------------------------------------
# Checkpointing: save model + optimizer + scheduler state_dicts, load with map_location,
# resume; the resumed run must equal an uninterrupted one.


def make_run(device):
    torch.manual_seed(0)
    # No bias before BatchNorm (as in ResNets): its gradient would be pure rounding noise,
    # which Adam's normalisation turns into full-size steps.
    model = nn.Sequential(nn.Linear(8, 16, bias=False), nn.BatchNorm1d(16), nn.ReLU(),
                          nn.Linear(16, 2))
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    return model, optimizer, scheduler


def run_steps(model, optimizer, scheduler, device, start, stop):
    data = torch.randn(6, 16, 8, generator=torch.Generator().manual_seed(3))
    for step in range(start, stop):
        x = data[step].to(device)
        loss = model(x).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize("map_location", ["cpu", "openreg", "openreg:1", None])
def test_checkpoint_round_trip_resumes_like_cpu(map_location):
    # Where the resumed model lives: the device the map_location names, else openreg:0.
    device = torch.device("openreg:1" if map_location == "openreg:1" else "openreg:0")
    cpu_run = make_run(torch.device("cpu"))
    run_steps(*cpu_run, torch.device("cpu"), 0, 6)

    model, optimizer, scheduler = make_run(device)
    run_steps(model, optimizer, scheduler, device, 0, 3)
    buffer = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "step": 3}, buffer)
    del model, optimizer, scheduler
    buffer.seek(0)
    checkpoint_ = torch.load(buffer, map_location=map_location, weights_only=True)
    if map_location is None:  # tensors come back on the device they were saved from
        assert checkpoint_["model"]["0.weight"].device == device
    elif map_location == "cpu":
        assert checkpoint_["model"]["0.weight"].device.type == "cpu"
    else:
        assert checkpoint_["model"]["0.weight"].device == device
    model, optimizer, scheduler = make_run(device)
    model.load_state_dict(checkpoint_["model"])
    optimizer.load_state_dict(checkpoint_["optimizer"])
    scheduler.load_state_dict(checkpoint_["scheduler"])
    run_steps(model, optimizer, scheduler, device, checkpoint_["step"], 6)
    assert all(p.device == device for p in model.parameters())
    assert_same_state(model, cpu_run[0])
    for state in optimizer.state.values():
        assert state["exp_avg"].device == device


# --------------------------------------------------------------------------------------
# Activation checkpointing with torch.utils.checkpoint, both implementations.


class CheckpointedMLP(nn.Module):
    def __init__(self, dropout, use_reentrant):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Dropout(dropout), nn.Linear(32, 16))
            for _ in range(3))
        self.use_reentrant = use_reentrant

    def forward(self, x):
        for block in self.blocks:
            x = x + checkpoint(block, x, use_reentrant=self.use_reentrant)
        return x


def checkpoint_grads(device, dropout, use_reentrant):
    torch.manual_seed(0)
    model = CheckpointedMLP(dropout, use_reentrant).to(device)
    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(1)).to(device)
    x.requires_grad_(True)  # the reentrant variant needs an input that requires grad
    torch.manual_seed(2)
    model(x).pow(2).sum().backward()
    return model, x.grad


@pytest.mark.parametrize("use_reentrant", [False, True], ids=["non_reentrant", "reentrant"])
@pytest.mark.parametrize("dropout", [0.2, 0.0],
                         ids=["dropout", "no_dropout"])
def test_activation_checkpointing_matches_cpu(dropout, use_reentrant):
    cpu_model, cpu_grad = checkpoint_grads(torch.device("cpu"), dropout, use_reentrant)
    model, grad = checkpoint_grads(DEVICE, dropout, use_reentrant)
    assert_same_tensor(grad, cpu_grad)
    assert_same_state(model, cpu_model)
    for p, cpu_p in zip(model.parameters(), cpu_model.parameters()):
        assert_same_tensor(p.grad, cpu_p.grad)


def test_checkpoint_sequential_matches_cpu():
    def run(device):
        torch.manual_seed(0)
        model = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(4)])
        model.to(device)
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(1)).to(device)
        checkpoint_sequential(model, 2, x, use_reentrant=False).sum().backward()
        return model

    model, cpu_model = run(DEVICE), run(torch.device("cpu"))
    for p, cpu_p in zip(model.parameters(), cpu_model.parameters()):
        assert_same_tensor(p.grad, cpu_p.grad)


# --------------------------------------------------------------------------------------
# Optimizer variants code asks for explicitly, and a weight EMA (timm, diffusers style).


@pytest.mark.parametrize("kwargs", [dict(fused=True), dict(foreach=False), dict(amsgrad=True)],
                         ids=["fused", "for_loop", "amsgrad"])
def test_adamw_variants_match_cpu(kwargs):
    def run(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, **kwargs)
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1)).to(device)
        for _ in range(3):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
        return model

    # The CPU reference always runs the single-tensor loop.
    cpu_kwargs = {k: v for k, v in kwargs.items() if k not in ("fused", "foreach")}
    cpu_kwargs["foreach"] = False

    def run_cpu():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, **cpu_kwargs)
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
        for _ in range(3):
            optimizer.zero_grad()
            model(x).pow(2).mean().backward()
            optimizer.step()
        return model

    assert_same_state(run(DEVICE), run_cpu())


def test_ema_averaged_model_matches_cpu():
    from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

    def run(device):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 1))
        model.to(device)
        ema = AveragedModel(model, device, multi_avg_fn=get_ema_multi_avg_fn(0.9),
                            use_buffers=True)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        x = torch.randn(3, 8, 8, generator=torch.Generator().manual_seed(1))
        for step in range(3):
            optimizer.zero_grad()
            model(x[step].to(device)).pow(2).mean().backward()
            optimizer.step()
            ema.update_parameters(model)
        return ema

    assert_same_state(run(DEVICE), run(torch.device("cpu")))


def test_sparse_embedding_sparse_adam_matches_cpu():
    # Large-vocabulary embeddings with sparse gradients (word2vec, DLRM-style models).
    def run(device):
        torch.manual_seed(0)
        embedding = nn.Embedding(100, 8, sparse=True).to(device)
        optimizer = torch.optim.SparseAdam(embedding.parameters(), lr=1e-2)
        ids = torch.randint(0, 100, (3, 16), generator=torch.Generator().manual_seed(1))
        for step in range(3):
            optimizer.zero_grad()
            embedding(ids[step].to(device)).pow(2).sum().backward()
            optimizer.step()
        return embedding

    assert_same_state(run(DEVICE), run(torch.device("cpu")))
