//! Student's t: the two-sided 95 % critical value for any degrees of freedom, the per-condition
//! [`Summary`] (mean, sd, n, 95 % confidence interval) and the off/on [`Difference`] (Welch).
//!
//! Why the t distribution: a condition has n rounds (15 in the seed study), one value per round, and
//! the population sd is unknown, so the interval of the mean is `x̄ ± t(0.975, n−1) · s / √n`.
//!
//! Why compute the quantile instead of keeping a table: Welch's degrees of freedom are fractional,
//! so a table for integer df cannot serve them. The quantile is found by bisection on the exact tail
//! probability `P(|T| > t) = I_{ν/(ν+t²)}(ν/2, 1/2)` (the regularized incomplete beta function,
//! evaluated by its continued fraction), accurate to about 1e-10 — tests hold it to the published
//! table for df 1..30 and beyond. Past [`LARGE_DF`] the Cornish–Fisher expansion (Abramowitz &
//! Stegun 26.7.5), already exact to 1e-12 there, replaces the continued fraction.
//!
//! Why Welch for off vs on: the two conditions of a pair are separate samples whose variances
//! differ a lot in practice (a breaker that opens turns a noisy latency into a steady fast
//! rejection), so the pooled-variance t test's equal-variance assumption does not hold. Welch's
//! interval uses each condition's own variance, `se = √(s₁²/n₁ + s₂²/n₂)`, with the
//! Welch–Satterthwaite degrees of freedom `se⁴ / ((s₁²/n₁)²/(n₁−1) + (s₂²/n₂)²/(n₂−1))`; with
//! equal variances and sizes it gives the pooled answer, so nothing is lost when they agree.

use serde::Serialize;

/// Confidence level of every interval Tolerant reports.
pub const CONFIDENCE: f64 = 0.95;

/// Above this many degrees of freedom the Cornish–Fisher series is used (error < 1e-12).
pub const LARGE_DF: f64 = 10_000.0;

/// The 0.975 quantile of the standard normal distribution (the limit of t as df grows).
pub const Z_975: f64 = 1.959_963_984_540_054;

/// `t(0.975, df)`: the critical value of a two-sided 95 % interval with `df` degrees of freedom
/// (fractional df allowed, as Welch's are). `None` unless `df` is a positive finite number.
pub fn t_critical_95(df: f64) -> Option<f64> {
    if !(df.is_finite() && df > 0.0) {
        return None;
    }
    if df > LARGE_DF {
        return Some(cornish_fisher_975(df));
    }
    let alpha = 1.0 - CONFIDENCE;
    let tail = |t: f64| two_sided_tail(t, df);
    // Bracket: the tail falls from 1 at t = 0 towards 0; double until it is below alpha.
    let mut low = 0.0;
    let mut high = 2.0;
    while tail(high) > alpha {
        low = high;
        high *= 2.0;
        if high > 1e12 {
            return None;
        }
    }
    for _ in 0..200 {
        let middle = 0.5 * (low + high);
        if tail(middle) > alpha {
            low = middle;
        } else {
            high = middle;
        }
        if high - low <= 1e-13 * high {
            break;
        }
    }
    Some(0.5 * (low + high))
}

/// `P(|T| > t)` for Student's t with `df` degrees of freedom, `t ≥ 0`.
fn two_sided_tail(t: f64, df: f64) -> f64 {
    regularized_incomplete_beta(0.5 * df, 0.5, df / (df + t * t))
}

/// Cornish–Fisher expansion of t(0.975, ν) around the normal quantile (A&S 26.7.5).
fn cornish_fisher_975(df: f64) -> f64 {
    let z = Z_975;
    let z2 = z * z;
    let z3 = z2 * z;
    let z5 = z3 * z2;
    let z7 = z5 * z2;
    let z9 = z7 * z2;
    let g1 = (z3 + z) / 4.0;
    let g2 = (5.0 * z5 + 16.0 * z3 + 3.0 * z) / 96.0;
    let g3 = (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / 384.0;
    let g4 = (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z) / 92_160.0;
    z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3) + g4 / df.powi(4)
}

/// `ln Γ(x)` for `x > 0` (Lanczos, g = 7, nine terms; relative error about 1e-15).
fn ln_gamma(x: f64) -> f64 {
    #[allow(clippy::excessive_precision)] // the published coefficients, kept as published
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_93,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_13,
        -176.615_029_162_140_59,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_571_6e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 − x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, &c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// `I_x(a, b)`, the regularized incomplete beta function, for `a, b > 0` and `x` in `[0, 1]`.
fn regularized_incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast on this side of the mean; use symmetry otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_continued_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz's method).
fn beta_continued_fraction(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITERATIONS: usize = 20_000;
    const EPSILON: f64 = 1e-16;
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let qab = a + b;
    let qap = a + 1.0;
    let qam = a - 1.0;
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITERATIONS {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < EPSILON {
            break;
        }
    }
    h
}

/// Mean, sample sd, n and the 95 % confidence interval of the mean of one value per round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator); `None` when n < 2.
    pub sd: Option<f64>,
    /// `t(0.975, n − 1) · sd / √n`; `None` when n < 2 (one round says nothing about spread).
    pub half_width: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
}

impl Summary {
    /// The summary of `values` (one per round); `None` when there is no value or one is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        if n < 2 {
            return Some(Summary {
                n,
                mean,
                sd: None,
                half_width: None,
                ci_low: None,
                ci_high: None,
            });
        }
        let squares: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        let sd = (squares / (n - 1) as f64).sqrt();
        let half_width = t_critical_95((n - 1) as f64)? * sd / (n as f64).sqrt();
        Some(Summary {
            n,
            mean,
            sd: Some(sd),
            half_width: Some(half_width),
            ci_low: Some(mean - half_width),
            ci_high: Some(mean + half_width),
        })
    }

    /// The interval `(low, high)`, when there is one.
    pub fn interval(&self) -> Option<(f64, f64)> {
        Some((self.ci_low?, self.ci_high?))
    }

    /// The same summary with every value multiplied by `factor > 0` (e.g. a fraction shown in %).
    pub fn scaled(&self, factor: f64) -> Summary {
        let scale = |v: Option<f64>| v.map(|v| v * factor);
        Summary {
            n: self.n,
            mean: self.mean * factor,
            sd: scale(self.sd),
            half_width: scale(self.half_width),
            ci_low: scale(self.ci_low),
            ci_high: scale(self.ci_high),
        }
    }

    /// Variance of the mean, `s² / n`.
    fn variance_of_mean(&self) -> Option<f64> {
        Some(self.sd?.powi(2) / self.n as f64)
    }
}

/// What an off/on comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The two conditions' 95 % intervals do not overlap (the conservative reading the study used).
    Separate,
    /// The intervals overlap, but Welch's interval of the difference excludes zero.
    DifferenceOnly,
    /// Neither: no difference shown at 95 %.
    NotSeparated,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Separate => "separate",
            Verdict::DifferenceOnly => "difference only",
            Verdict::NotSeparated => "not separated",
        }
    }
}

/// `treatment − baseline` (e.g. breaker on − breaker off at one failure rate) with Welch's 95 %
/// interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    pub baseline_mean: f64,
    pub treatment_mean: f64,
    /// `treatment_mean − baseline_mean`.
    pub difference: f64,
    /// `t(0.975, df) · se`.
    pub half_width: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
    /// The two conditions' own 95 % intervals do not overlap.
    pub intervals_separate: bool,
    /// The difference's interval does not contain zero.
    pub excludes_zero: bool,
    pub verdict: Verdict,
}

impl Difference {
    /// Welch's comparison of two summaries; `None` unless both have n ≥ 2.
    pub fn welch(baseline: &Summary, treatment: &Summary) -> Option<Difference> {
        let v_baseline = baseline.variance_of_mean()?;
        let v_treatment = treatment.variance_of_mean()?;
        let (base_low, base_high) = baseline.interval()?;
        let (treat_low, treat_high) = treatment.interval()?;
        let difference = treatment.mean - baseline.mean;
        let se_squared = v_baseline + v_treatment;
        let (df, half_width) = if se_squared > 0.0 {
            let denominator = v_baseline.powi(2) / (baseline.n - 1) as f64
                + v_treatment.powi(2) / (treatment.n - 1) as f64;
            let df = se_squared.powi(2) / denominator;
            (df, t_critical_95(df)? * se_squared.sqrt())
        } else {
            // Both conditions constant: the difference is known exactly.
            ((baseline.n + treatment.n - 2) as f64, 0.0)
        };
        let ci_low = difference - half_width;
        let ci_high = difference + half_width;
        let intervals_separate = base_high < treat_low || treat_high < base_low;
        let excludes_zero = ci_low > 0.0 || ci_high < 0.0;
        let verdict = if intervals_separate {
            Verdict::Separate
        } else if excludes_zero {
            Verdict::DifferenceOnly
        } else {
            Verdict::NotSeparated
        };
        Some(Difference {
            baseline_mean: baseline.mean,
            treatment_mean: treatment.mean,
            difference,
            half_width,
            ci_low,
            ci_high,
            df,
            intervals_separate,
            excludes_zero,
            verdict,
        })
    }
}
