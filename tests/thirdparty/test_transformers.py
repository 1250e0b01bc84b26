"""Hugging Face transformers models, unmodified, on openreg versus the CPU.

Each model is a small randomly initialised config (no download): built on the CPU with a
fixed seed, deep-copied to openreg, then the forward pass, a few AdamW steps and greedy
generate() must agree. Together they cover embeddings (learned, relative and rotary
positions), eager and SDPA attention, LayerNorm/RMSNorm, GQA, encoder-decoder cross
attention, conv front ends, KV-cached decoding and the label losses.
"""

from __future__ import annotations

import copy

import pytest
import torch
import transformers
from torch.optim.optimizer import _default_to_fused_or_foreach

from thirdparty_compare import DEVICE, assert_same_state, assert_same_tensor, to_device

VOCAB = 96
SPECIAL = dict(pad_token_id=0, bos_token_id=1, eos_token_id=2)
transformers.logging.set_verbosity_error()


def gpt2(**kw):
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=32, n_layer=2,
                                     n_head=4, **SPECIAL, **kw)
    return transformers.GPT2LMHeadModel(config)


def llama(**kw):
    # Two KV heads for four query heads: grouped-query attention; rotary positions; RMSNorm.
    kw.setdefault("attention_dropout", 0.1)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64,
                                      **SPECIAL, **kw)
    return transformers.LlamaForCausalLM(config)


def mixtral(**kw):
    # Mixture of experts: off the CPU, transformers' grouped_mm experts count the tokens
    # routed to each expert with torch.histc of an int tensor (CUDA's coverage).
    config = transformers.MixtralConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=4,
                                        num_key_value_heads=2, num_local_experts=4,
                                        num_experts_per_tok=2, max_position_embeddings=64,
                                        **SPECIAL, **kw)
    return transformers.MixtralForCausalLM(config)


def bert(**kw):
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                     num_hidden_layers=2, num_attention_heads=4,
                                     max_position_embeddings=64, pad_token_id=0, **kw)
    return transformers.BertForMaskedLM(config)


def t5(**kw):
    config = transformers.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2,
                                   num_heads=4, decoder_start_token_id=0, pad_token_id=0,
                                   eos_token_id=2, **kw)
    return transformers.T5ForConditionalGeneration(config)


def whisper(**kw):
    config = transformers.WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=32,
                                        encoder_layers=2, decoder_layers=2,
                                        encoder_attention_heads=4, decoder_attention_heads=4,
                                        encoder_ffn_dim=64, decoder_ffn_dim=64,
                                        max_source_positions=20, max_target_positions=32,
                                        decoder_start_token_id=1, **SPECIAL, **kw)
    return transformers.WhisperForConditionalGeneration(config)


def vit(**kw):
    config = transformers.ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                                    intermediate_size=64, num_hidden_layers=2,
                                    num_attention_heads=4, num_labels=5, **kw)
    return transformers.ViTForImageClassification(config)


def causal_lm_batch(generator):
    input_ids = torch.randint(3, VOCAB, (2, 10), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[0, :3] = 0  # left padding, as batched generation uses
    input_ids[0, :3] = 0
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    return dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)


def masked_lm_batch(generator):
    input_ids = torch.randint(3, VOCAB, (2, 10), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 7:] = 0
    labels = torch.full_like(input_ids, -100)
    labels[:, 2:5] = input_ids[:, 2:5]
    return dict(input_ids=input_ids, attention_mask=attention_mask,
                token_type_ids=(torch.arange(10) >= 5).long().expand(2, 10), labels=labels)


def seq2seq_batch(generator):
    input_ids = torch.randint(3, VOCAB, (2, 10), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 8:] = 0
    labels = torch.randint(3, VOCAB, (2, 6), generator=generator)
    labels[1, 4:] = -100
    return dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)


def speech_batch(generator):
    # Whisper's encoder expects exactly 2 * max_source_positions input frames.
    return dict(input_features=torch.randn(2, 16, 40, generator=generator),
                labels=torch.randint(3, VOCAB, (2, 6), generator=generator))


def image_batch(generator):
    return dict(pixel_values=torch.randn(2, 3, 16, 16, generator=generator),
                labels=torch.randint(0, 5, (2,), generator=generator))


MODELS = {
    "gpt2": (gpt2, causal_lm_batch),
    "llama": (llama, causal_lm_batch),
    "mixtral": (mixtral, causal_lm_batch),
    "bert": (bert, masked_lm_batch),
    "t5": (t5, seq2seq_batch),
    "whisper": (whisper, speech_batch),
    "vit": (vit, image_batch),
}
GENERATIVE = ["gpt2", "llama", "t5", "whisper"]
# Models whose output projection shares the input embedding's Parameter by default.
TIED = {"gpt2", "bert", "t5", "whisper"}


def build(name, **config):
    """The CPU model and its deep copy on openreg, as `copy.deepcopy(model).to(device)`."""
    make, _ = MODELS[name]
    torch.manual_seed(0)
    cpu_model = make(**config)
    return cpu_model, copy.deepcopy(cpu_model).to(DEVICE)


def batch_for(name):
    _, make_batch = MODELS[name]
    return make_batch(torch.Generator().manual_seed(1))


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_forward_and_loss_match_cpu(name, attn):
    cpu_model, device_model = build(name, attn_implementation=attn)
    batch = batch_for(name)
    outputs = {}
    for model, inputs in ((cpu_model, batch), (device_model, to_device(batch))):
        model.train()  # dropout on: each device's generator must give the CPU's masks
        torch.manual_seed(2)
        outputs[model] = model(**inputs)
    expected, actual = outputs[cpu_model], outputs[device_model]
    assert_same_tensor(actual.loss, expected.loss)
    assert_same_tensor(actual.logits, expected.logits)


def train(model, batch, steps=3):
    model.train()
    # The optimizer's own default: foreach kernels on openreg (a foreach-capable device).
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses = []
    torch.manual_seed(3)
    for _ in range(steps):
        loss = model(**batch).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    return torch.stack(losses)


TRAINING_CASES = [pytest.param(name, {}, id=name) for name in sorted(MODELS)]
# The tied models once more without the tie: both parameter layouts must train alike.
TRAINING_CASES += [pytest.param(name, {"tie_word_embeddings": False}, id=f"{name}-untied")
                   for name in sorted(TIED)]


@pytest.mark.parametrize(("name", "config"), TRAINING_CASES)
def test_adamw_training_matches_cpu(name, config):
    cpu_model, device_model = build(name, **config)
    # What AdamW decides when neither fused nor foreach is given: the foreach kernels.
    assert _default_to_fused_or_foreach(list(device_model.parameters()), False, False) == (
        False, True)
    batch = batch_for(name)
    expected_losses = train(cpu_model, batch)
    actual_losses = train(device_model, to_device(batch))
    assert_same_tensor(actual_losses, expected_losses)
    assert_same_state(device_model, cpu_model)


@pytest.mark.parametrize(
    ("dropout", "offload"),
    [(0.1, False), (0.0, False), (0.0, True)],
    ids=["dropout", "no_dropout", "offload"])
def test_activation_checkpointing_matches_cpu(dropout, offload):
    # transformers' own activation checkpointing (non-reentrant torch.utils.checkpoint);
    # with attention dropout the recomputation must replay the openreg RNG state; with
    # offload the saved activations wait in pinned host memory.
    cpu_model, device_model = build("llama", attention_dropout=dropout)
    for model in (cpu_model, device_model):
        model.activation_checkpointing_enable({"use_reentrant": False}, offload=offload)
    batch = batch_for("llama")
    assert_same_tensor(train(device_model, to_device(batch)), train(cpu_model, batch))
    assert_same_state(device_model, cpu_model)


def generation_inputs(name):
    batch = batch_for(name)
    batch.pop("labels")
    return batch


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("name", GENERATIVE)
def test_greedy_generate_matches_cpu(name, attn):
    cpu_model, device_model = build(name, attn_implementation=attn)
    inputs = generation_inputs(name)
    kwargs = dict(max_new_tokens=8, do_sample=False, use_cache=True)
    expected = cpu_model.eval().generate(**inputs, **kwargs)
    actual = device_model.eval().generate(**to_device(inputs), **kwargs)
    assert actual.device.type == DEVICE.type
    assert actual.tolist() == expected.tolist()


def test_sampling_generate_matches_cpu():
    # Top-k/top-p sampling draws from torch.multinomial: same seed, same tokens.
    cpu_model, device_model = build("llama")
    inputs = generation_inputs("llama")
    kwargs = dict(max_new_tokens=8, do_sample=True, top_k=20, top_p=0.9, temperature=0.8)
    torch.manual_seed(4)
    expected = cpu_model.eval().generate(**inputs, **kwargs)
    torch.manual_seed(4)
    actual = device_model.eval().generate(**to_device(inputs), **kwargs)
    assert actual.tolist() == expected.tolist()


@pytest.mark.parametrize("name", ["gpt2", "t5"])
def test_beam_search_matches_cpu(name):
    # Beam search reorders the KV cache with index_select every step; a repetition
    # penalty gathers and scatters scores.
    cpu_model, device_model = build(name)
    inputs = generation_inputs(name)
    kwargs = dict(max_new_tokens=6, num_beams=3, num_return_sequences=2, do_sample=False,
                  repetition_penalty=1.3)
    expected = cpu_model.eval().generate(**inputs, **kwargs)
    actual = device_model.eval().generate(**to_device(inputs), **kwargs)
    assert actual.tolist() == expected.tolist()


def test_generate_on_second_device():
    # Everything on openreg:1 while openreg:0 stays the current device.
    torch.manual_seed(0)
    cpu_model = llama().eval()
    device = torch.device("openreg:1")
    device_model = copy.deepcopy(cpu_model).to(device)
    inputs = generation_inputs("llama")
    kwargs = dict(max_new_tokens=6, do_sample=False)
    actual = device_model.generate(**to_device(inputs, device), **kwargs)
    assert actual.device == device
    assert torch.openreg.current_device() == 0
    assert actual.tolist() == cpu_model.generate(**inputs, **kwargs).tolist()


@pytest.mark.parametrize("name", sorted(MODELS))
def test_bf16_autocast_forward_matches_cpu(name):
    cpu_model, device_model = build(name)
    batch = batch_for(name)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        expected = cpu_model.eval()(**batch)
    with torch.autocast(device_type=DEVICE.type, dtype=torch.bfloat16):
        actual = device_model.eval()(**to_device(batch))
    assert actual.logits.dtype == expected.logits.dtype
    # openreg applies CUDA's autocast lists, the CPU its own: both run the matmuls in
    # bfloat16 but, e.g., the CPU upcasts cross_entropy_loss to float32 where CUDA (and
    # openreg) run its log_softmax in bfloat16. So results differ by bfloat16 roundings
    # (eps 2**-7 = 7.8e-3) of intermediates, at the scale of the largest value: tolerate
    # two of them relative to the largest logit, a wrong kernel is off by far more.
    bf16_scale = 2 * torch.finfo(torch.bfloat16).eps
    assert_same_tensor(actual.logits, expected.logits, rtol=bf16_scale,
                       atol=bf16_scale * expected.logits.abs().max().item())
    assert_same_tensor(actual.loss, expected.loss, rtol=bf16_scale, atol=0)


def test_compiled_gpt2_training_matches_cpu():
    # torch.compile (Inductor) of GPT-2's loss, forward and backward, with dropout: the
    # openreg graph runs Inductor's C++ kernels on device memory, the CPU graph the same
    # kernels on host memory; the same seed gives the same dropout masks on both.
    torch._dynamo.reset()
    cpu_model, device_model = build("gpt2")
    ids = torch.randint(3, VOCAB, (2, 12))
    results = {}
    for side, model, x in (("cpu", cpu_model, ids), ("openreg", device_model, ids.to(DEVICE))):
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
        loss_of = torch.compile(lambda x, model=model: model(input_ids=x, labels=x).loss)
        torch.manual_seed(5)
        for _ in range(2):
            optimizer.zero_grad()
            loss = loss_of(x)
            loss.backward()
            optimizer.step()
        results[side] = (loss, model)
    assert_same_tensor(results["openreg"][0], results["cpu"][0])
    assert_same_state(results["openreg"][1], results["cpu"][1])
