"""Self-attention on a CPU, fp32 against bf16: PyTorch's `scaled_dot_product_attention`
kernel, and the same maths as two matmuls and a softmax, with a padding mask as BERT passes it.

Why: on a CPU with bf16 matmuls (AMX, AVX512-BF16) the linear layers of a transformer run
several times as fast in bf16, so what attention costs decides how much of that a long packed
pass (the reranker's multi and passage modes) keeps.

    python bench/attention_kernel.py [--batch 8] [--heads 12] [--tokens 400] [--head-dim 32] [--threads 2]

The defaults are a batch of multi-mode passes of MiniLM (12 heads of 32 dimensions).
"""
import argparse
import time

import torch
import torch.nn.functional as F


def timed(run, repeats: int = 20) -> float:
    """Milliseconds per call, after 3 warm-up calls."""
    for _ in range(3):
        run()
    started = time.perf_counter()
    for _ in range(repeats):
        run()
    return (time.perf_counter() - started) / repeats * 1000


def by_matmuls(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T * scale + mask) v over (batch x heads) matrices, the mask added by the
    first product (`baddbmm`): on a CPU the fastest of the forms tried, 4-d `matmul` with a
    broadcast add was 2 to 3 times slower and varied from run to run."""
    batch, heads, length, dim = q.shape

    def flat(x: torch.Tensor) -> torch.Tensor:
        return x.reshape(batch * heads, -1, dim)

    mask = mask.expand(batch, heads, -1, k.shape[-2]).reshape(batch * heads, -1, k.shape[-2])
    scores = torch.baddbmm(mask, flat(q), flat(k).transpose(1, 2), alpha=dim ** -0.5)
    return torch.bmm(torch.softmax(scores, -1), flat(v)).view(batch, heads, length, dim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--tokens", type=int, default=400)
    parser.add_argument("--head-dim", type=int, default=32)
    parser.add_argument("--padding", type=int, default=50, help="masked tokens at the end of each row")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shape = (args.batch, args.heads, args.tokens, args.head_dim)
    print(f"q, k, v {tuple(shape)}, {args.padding} padded tokens, torch threads {torch.get_num_threads()}")
    print(f"{'dtype':>9}{'sdpa ms':>9}{'matmuls ms':>12}{'q k^T ms':>10}{'max diff':>10}")
    times = {}
    with torch.no_grad():
        for dtype in (torch.float32, torch.bfloat16):
            q, k, v = (torch.randn(shape, dtype=dtype) for _ in range(3))
            mask = torch.zeros(args.batch, 1, 1, args.tokens, dtype=dtype)
            mask[..., args.tokens - args.padding:] = torch.finfo(dtype).min
            sdpa = timed(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask))
            matmuls = timed(lambda: by_matmuls(q, k, v, mask))
            scores = timed(lambda: torch.matmul(q, k.transpose(-1, -2)))
            diff = (F.scaled_dot_product_attention(q, k, v, attn_mask=mask).float()
                    - by_matmuls(q, k, v, mask).float()).abs().max().item()
            times[dtype] = (sdpa, matmuls)
            print(f"{str(dtype).split('.')[-1]:>9}{sdpa:>9.2f}{matmuls:>12.2f}{scores:>10.2f}{diff:>10.2g}")
    (sdpa32, matmul32), (sdpa16, matmul16) = times[torch.float32], times[torch.bfloat16]
    print(f"bf16 / fp32 time: sdpa {sdpa16 / sdpa32:.2f}, matmuls {matmul16 / matmul32:.2f}; "
          f"in bf16 the matmuls take {matmul16 / sdpa16:.2f} of sdpa's time")


if __name__ == "__main__":
    main()
