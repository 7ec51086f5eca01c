"""pass@k with the unbiased estimator of Chen et al. (2021): 1 - C(n-c, k) / C(n, k)."""

from __future__ import annotations

import math


def pass_at_k(n: int, c: int, k: int) -> float:
    """The probability that at least one of k samples drawn from n (c of them correct) passes.

    Computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), the numerically stable form of
    1 - C(n-c, k) / C(n, k).
    """
    if not 0 <= c <= n:
        raise ValueError(f"c must be between 0 and n (n={n}, c={c}).")
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n (n={n}, k={k}).")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))
