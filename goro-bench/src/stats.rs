//! Medians, spreads and the Mann-Whitney U test (as benchstat uses).

/// The median (mean of the middle two for an even count); NaN when empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// (min, max); NaNs when empty.
pub fn min_max(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (lo, hi)
}

/// Spread as benchstat prints it: the larger distance from the median to
/// min or max, as a fraction of the median.
pub fn spread_frac(xs: &[f64]) -> f64 {
    let m = median(xs);
    let (lo, hi) = min_max(xs);
    if m == 0.0 || m.is_nan() {
        return 0.0;
    }
    ((m - lo).max(hi - m)) / m
}

/// The result of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy)]
pub struct UTest {
    /// Two-sided p-value.
    pub p: f64,
    /// Whether `p` is exact (the permutation distribution with the data's
    /// ties) or the normal approximation (with tie and continuity correction).
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test of `a` against `b`.
///
/// For up to 50 values in all the p-value is exact: the distribution of the
/// rank sum of `a` over every way of choosing `a.len()` of the pooled
/// mid-ranks, counted by dynamic programming (so ties are handled exactly).
/// Beyond that, the normal approximation with tie correction.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> UTest {
    let (n1, n2) = (a.len(), b.len());
    if n1 == 0 || n2 == 0 {
        return UTest {
            p: 1.0,
            exact: true,
        };
    }
    let n = n1 + n2;
    // Pooled mid-ranks, doubled so they are integers.
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&x| (x, 0))
        .chain(b.iter().map(|&x| (x, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut rank2 = vec![0usize; n]; // doubled mid-rank per sorted position
    let mut ties: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        // ranks i+1 ..= j+1; doubled mid-rank = (i+1)+(j+1)
        for r in rank2.iter_mut().take(j + 1).skip(i) {
            *r = i + j + 2;
        }
        ties.push(j - i + 1);
        i = j + 1;
    }
    let s_obs: usize = (0..n).filter(|&k| all[k].1 == 0).map(|k| rank2[k]).sum();
    let e2 = n1 * (n + 1); // doubled expected rank sum of a
    let dev_obs = (s_obs as i64 - e2 as i64).abs();

    if n <= 50 {
        // dp[k][s]: ways to choose k of the items seen so far with doubled rank sum s.
        let max_s: usize = rank2.iter().sum();
        let mut dp = vec![vec![0f64; max_s + 1]; n1 + 1];
        dp[0][0] = 1.0;
        for &r in &rank2 {
            for k in (1..=n1).rev() {
                for s in (r..=max_s).rev() {
                    let add = dp[k - 1][s - r];
                    if add != 0.0 {
                        dp[k][s] += add;
                    }
                }
            }
        }
        let total: f64 = dp[n1].iter().sum();
        let extreme: f64 = dp[n1]
            .iter()
            .enumerate()
            .filter(|(s, _)| (*s as i64 - e2 as i64).abs() >= dev_obs)
            .map(|(_, c)| c)
            .sum();
        return UTest {
            p: (extreme / total).min(1.0),
            exact: true,
        };
    }

    let (n1f, n2f, nf) = (n1 as f64, n2 as f64, n as f64);
    let u = s_obs as f64 / 2.0 - n1f * (n1f + 1.0) / 2.0;
    let mu = n1f * n2f / 2.0;
    let tie_term: f64 =
        ties.iter().map(|&t| (t * t * t - t) as f64).sum::<f64>() / (nf * (nf - 1.0));
    let sigma = (n1f * n2f / 12.0 * ((nf + 1.0) - tie_term)).sqrt();
    if sigma == 0.0 {
        return UTest {
            p: 1.0,
            exact: false,
        };
    }
    let z = ((u - mu).abs() - 0.5).max(0.0) / sigma;
    UTest {
        p: (2.0 * normal_sf(z)).min(1.0),
        exact: false,
    }
}

/// Upper tail of the standard normal distribution.
fn normal_sf(z: f64) -> f64 {
    0.5 * erfc(z / std::f64::consts::SQRT_2)
}

/// erfc, Numerical Recipes' Chebyshev fit (relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.26551223
            + t * (1.00002368
                + t * (0.37409196
                    + t * (0.09678418
                        + t * (-0.18628806
                            + t * (0.27886807
                                + t * (-1.13520398
                                    + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The smallest two-sided p an exact test can give with these sizes (no
/// ties): 2 / C(n1+n2, n1).
pub fn min_p(n1: usize, n2: usize) -> f64 {
    let mut c = 1f64;
    for i in 0..n1 {
        c = c * (n2 + n1 - i) as f64 / (i + 1) as f64;
    }
    (2.0 / c).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_even_and_odd_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn fully_separated_samples_give_the_smallest_exact_p() {
        let t = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert!(t.exact);
        assert!((t.p - 2.0 / 252.0).abs() < 1e-12, "p = {}", t.p);
        assert!((min_p(5, 5) - 2.0 / 252.0).abs() < 1e-12);
        assert!((min_p(3, 3) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn identical_samples_are_not_significant() {
        let t = mann_whitney(&[1.0, 1.0, 1.0], &[1.0, 1.0, 1.0]);
        assert_eq!(t.p, 1.0);
        let t = mann_whitney(&[1.0, 3.0, 5.0, 7.0], &[2.0, 4.0, 6.0, 8.0]);
        assert!(t.p > 0.5, "p = {}", t.p);
    }

    #[test]
    fn normal_approximation_agrees_with_exact_for_large_samples() {
        let a: Vec<f64> = (0..30).map(|i| i as f64).collect();
        let b: Vec<f64> = (0..30).map(|i| i as f64 + 8.5).collect();
        let exact = mann_whitney(&a[..25], &b[..25]);
        assert!(exact.exact);
        let approx = mann_whitney(&a, &b);
        assert!(!approx.exact);
        assert!(exact.p < 0.05 && approx.p < 0.05, "{exact:?} {approx:?}");
    }
}
