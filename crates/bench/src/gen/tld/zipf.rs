//! The popularity of hosting providers: a Zipf draw in constant time and memory.

/// Zipf(n, s) by rejection-inversion (Hörmann and Derflinger, 1996): a rank in
/// 1..=n with probability proportional to rank^-s, in constant time and memory.
#[derive(Debug, Clone, Copy)]
pub struct Zipf {
    n: f64,
    s: f64,
    h_x1: f64,
    h_n: f64,
    cut: f64,
}

impl Zipf {
    /// The distribution over 1..=`n` (`n` ≥ 1) with exponent `s` (> 0).
    pub fn new(n: u64, s: f64) -> Zipf {
        let mut z = Zipf {
            n: n.max(1) as f64,
            s,
            h_x1: 0.0,
            h_n: 0.0,
            cut: 0.0,
        };
        z.h_x1 = z.h_integral(1.5) - 1.0;
        z.h_n = z.h_integral(z.n + 0.5);
        z.cut = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    /// A rank, drawing uniform values in [0, 1) from `next`.
    pub fn sample(&self, mut next: impl FnMut() -> f64) -> u64 {
        loop {
            let u = self.h_n + next() * (self.h_x1 - self.h_n);
            let x = self.h_integral_inverse(u);
            let k = (x + 0.5).clamp(1.0, self.n).floor();
            if k - x <= self.cut || u >= self.h_integral(k + 0.5) - self.h(k) {
                return k as u64;
            }
        }
    }

    fn h(&self, x: f64) -> f64 {
        (-self.s * x.ln()).exp()
    }

    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.s) * lx) * lx
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.s)).max(-1.0);
        (helper1(t) * x).exp()
    }
}

/// ln(1 + x) / x, also near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x − 1) / x, also near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}
