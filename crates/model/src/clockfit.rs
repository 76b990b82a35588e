//! What the messages between two hosts say about their clocks: every range of offsets and
//! drifts consistent with "a read ends after the write it read began", found exactly.
//!
//! Host `b`'s clock is mapped to host `a`'s by `t_a = t_b + offset + drift * (t_b - start_b)`.
//! A message from `a` to `b` (written from `sent` on `a`, read by `received` on `b`) says the
//! map puts `received` after `sent`; one from `b` to `a` says it puts `sent` before `received`.
//! Each is a half-plane in (offset, drift); their intersection is a convex polygon, empty when
//! the messages contradict each other (clocks that jumped, or connections wrongly matched).
//! Only the hull of each direction's points can bind, so the points are first reduced to their
//! hull (the method of Duda et al. and of Jabbarifar and Dagenais' convex-hull synchronisation,
//! here on the times of the calls rather than of packets).
//!
//! Two users: the graph stage, which puts the clocks of several machines' traces on one when
//! they are inferred together, and `scalpel sql`'s `clock_fit` aggregate, which fits the same
//! pairs from datasets written apart.
//!
//! Why the drift is capped at ±500 ppm: `CLOCK_MONOTONIC` is slewed by NTP, and the kernel never
//! slews a clock faster than that; without a cap, messages in a short burst bound the offset only
//! through a drift no real clock has.

/// The largest drift between two monotonic clocks (see the module docs), as a fraction.
pub const MAX_DRIFT: f64 = 500e-6;

/// One message: when its write began on the sender's clock, when the read that took it ended on
/// the receiver's, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// When the write began, on the sender's clock (ns).
    pub sent: u64,
    /// When the read that took its bytes ended, on the receiver's clock (ns).
    pub received: u64,
}

/// The map from one host's clock to another's that their messages allow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairFit {
    /// Added to the mapped host's time at its start (ns).
    pub offset: f64,
    /// Fraction by which the mapped host's clock runs slow against the other's.
    pub drift: f64,
    /// Half the width of the offsets the messages allow at the start (ns).
    pub bound: f64,
    /// Half the width of the drifts the messages allow (a fraction).
    pub drift_bound: f64,
    /// The messages allow a range of drifts narrower than the cap: they span enough time.
    pub drift_known: bool,
    /// Messages used, both directions.
    pub messages: usize,
    /// The messages contradict each other: no map satisfies them all. The fit is then the
    /// midpoint of the closest approach, and `bound` how far they overlap (ns).
    pub crossed: bool,
}

/// A point of the (time since start, difference of clocks) plane.
type Pt = (f64, f64);

/// Fits the map from host `b`'s clock to host `a`'s: `forward` went from `a` to `b`, `back`
/// from `b` to `a`, `start_b` is host `b`'s start. `None` when a direction has no message (one
/// direction bounds the offset on one side only).
pub fn fit(forward: &[Message], back: &[Message], start_b: u64) -> Option<PairFit> {
    if forward.is_empty() || back.is_empty() {
        return None;
    }
    // Only the hulls can bind; found in integers, so that f64 rounding never decides which
    // point of a nearly straight run is kept.
    let (lower, upper) = binding(forward, back);
    // Differences are taken around one of them, so that clocks of different boots (days
    // apart) still leave f64 its precision.
    let origin = forward[0].sent as f64 - forward[0].received as f64;
    let x = |t: u64| t as f64 - start_b as f64;
    // offset + drift * x >= sent - received, for forward messages (received on b).
    let below: Vec<Pt> = lower
        .iter()
        .map(|m| (x(m.received), m.sent as f64 - m.received as f64 - origin))
        .collect();
    // offset + drift * x <= received - sent, for messages back (sent on b).
    let above: Vec<Pt> = upper
        .iter()
        .map(|m| (x(m.sent), m.received as f64 - m.sent as f64 - origin))
        .collect();
    let messages = forward.len() + back.len();
    let fit = match feasible(&below, &above) {
        Some(poly) => from_polygon(&poly, messages),
        None => crossed(&below, &above, messages),
    };
    Some(PairFit {
        offset: fit.offset + origin,
        ..fit
    })
}

/// Of `forward` and `back` (as for [`fit`]), the messages whose constraints can bind: each
/// direction's hull, so that [`fit`] of them is [`fit`] of all of them but for
/// [`PairFit::messages`]. Why exact: the hull is found in integers, so the set is the same
/// however the messages were split into parts and the parts' hulls merged (the hull of the
/// union of hulls is the hull of the union), which keeps an aggregate over them in bounded
/// memory and its answer the same from one partitioning to the next. Sorted by their point.
pub fn binding(forward: &[Message], back: &[Message]) -> (Vec<Message>, Vec<Message>) {
    // The points `fit` takes, in integers: forward messages bound from below at the time of
    // their read, messages back from above at the time of their write.
    let below = |m: &Message| (m.received, i128::from(m.sent) - i128::from(m.received));
    let above = |m: &Message| (m.sent, i128::from(m.received) - i128::from(m.sent));
    (
        exact_hull(forward, below, true),
        exact_hull(back, above, false),
    )
}

/// The messages of `msgs` on the upper (`upper`) or lower hull of their points `at(m)`, sorted
/// by point (Andrew's monotone chain, in integers).
fn exact_hull(msgs: &[Message], at: impl Fn(&Message) -> (u64, i128), upper: bool) -> Vec<Message> {
    let mut pts: Vec<((i128, i128), Message)> = msgs
        .iter()
        .map(|m| {
            let (x, y) = at(m);
            ((i128::from(x), y), *m)
        })
        .collect();
    pts.sort_unstable_by_key(|&(p, m)| (p, m.sent, m.received));
    let mut h: Vec<((i128, i128), Message)> = Vec::new();
    for (p, m) in pts {
        while h.len() >= 2 {
            let (o, a) = (h[h.len() - 2].0, h[h.len() - 1].0);
            // Differences of times within one recording: far below i128's range squared.
            let cross = (a.0 - o.0) * (p.1 - o.1) - (a.1 - o.1) * (p.0 - o.0);
            if (upper && cross >= 0) || (!upper && cross <= 0) {
                h.pop();
            } else {
                break;
            }
        }
        h.push((p, m));
    }
    h.into_iter().map(|(_, m)| m).collect()
}

/// A half-plane `sign * (offset + drift * x - y) >= 0` in (offset, drift).
#[derive(Clone, Copy)]
struct Half {
    x: f64,
    y: f64,
    sign: f64,
}

impl Half {
    fn value(&self, p: Pt) -> f64 {
        self.sign * (p.0 + p.1 * self.x - self.y)
    }
}

/// The polygon of (offset, drift) that every point allows, drift within the cap; `None` when
/// empty.
fn feasible(below: &[Pt], above: &[Pt]) -> Option<Vec<Pt>> {
    let halves = below
        .iter()
        .map(|&(x, y)| Half { x, y, sign: 1.0 })
        .chain(above.iter().map(|&(x, y)| Half { x, y, sign: -1.0 }));
    // A box the constraints then cut: drifts within the cap, offsets within what a first
    // point of each side allows at the cap's extremes.
    let span = below
        .iter()
        .chain(above)
        .map(|p| p.0.abs() * MAX_DRIFT + p.1.abs())
        .fold(1.0f64, f64::max);
    let big = 4.0 * span + 1.0;
    let mut poly: Vec<Pt> = vec![
        (-big, -MAX_DRIFT),
        (big, -MAX_DRIFT),
        (big, MAX_DRIFT),
        (-big, MAX_DRIFT),
    ];
    for h in halves {
        poly = clip(&poly, h);
        if poly.is_empty() {
            return None;
        }
    }
    Some(poly)
}

/// Sutherland–Hodgman: the part of convex `poly` inside `h`.
fn clip(poly: &[Pt], h: Half) -> Vec<Pt> {
    let mut out = Vec::with_capacity(poly.len() + 1);
    for (i, &p) in poly.iter().enumerate() {
        let q = poly[(i + 1) % poly.len()];
        let (vp, vq) = (h.value(p), h.value(q));
        if vp >= 0.0 {
            out.push(p);
        }
        if (vp >= 0.0) != (vq >= 0.0) {
            let t = vp / (vp - vq);
            out.push((p.0 + t * (q.0 - p.0), p.1 + t * (q.1 - p.1)));
        }
    }
    out
}

/// The centre of the polygon: the middle of the offsets it allows, then the middle of the
/// drifts it allows at that offset. The true map is in the polygon, so the offset found is
/// within `bound` of the true one.
fn from_polygon(poly: &[Pt], messages: usize) -> PairFit {
    let (lo, hi) = poly.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.0), hi.max(p.0))
    });
    let offset = (lo + hi) / 2.0;
    let mut drifts = (f64::MAX, f64::MIN);
    let mut seen = |d: f64| drifts = (drifts.0.min(d), drifts.1.max(d));
    for (i, &p) in poly.iter().enumerate() {
        let q = poly[(i + 1) % poly.len()];
        if (p.0 - offset) * (q.0 - offset) > 0.0 {
            continue;
        }
        if q.0 == p.0 {
            seen(p.1);
            seen(q.1);
        } else {
            seen(p.1 + (offset - p.0) / (q.0 - p.0) * (q.1 - p.1));
        }
    }
    let (dmin, dmax) = poly.iter().fold((f64::MAX, f64::MIN), |(lo, hi), p| {
        (lo.min(p.1), hi.max(p.1))
    });
    PairFit {
        offset,
        drift: if drifts.0 <= drifts.1 {
            (drifts.0 + drifts.1) / 2.0
        } else {
            0.0
        },
        bound: (hi - lo) / 2.0,
        drift_bound: (dmax - dmin) / 2.0,
        drift_known: dmax - dmin < 2.0 * MAX_DRIFT * 0.999,
        messages,
        crossed: false,
    }
}

/// No map satisfies every message: with no drift, the offset midway between the tightest
/// message each way, and how far those two overlap.
fn crossed(below: &[Pt], above: &[Pt], messages: usize) -> PairFit {
    let least = below.iter().map(|p| p.1).fold(f64::MIN, f64::max);
    let most = above.iter().map(|p| p.1).fold(f64::MAX, f64::min);
    PairFit {
        offset: (least + most) / 2.0,
        drift: 0.0,
        bound: (least - most).max(0.0) / 2.0,
        drift_bound: MAX_DRIFT,
        drift_known: false,
        messages,
        crossed: true,
    }
}

#[cfg(test)]
// Why: the tests make times from f64 offsets and drifts, all positive and far below u64's range.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
mod tests {
    use super::*;

    /// Messages between `a` (the reference) and `b`, whose clock reads `t_a - offset` slowed by
    /// `drift`, with one-way latency `lat` ns: `n` each way, `gap` ns apart.
    fn talk(offset: f64, drift: f64, lat: u64, n: u64, gap: u64) -> (Vec<Message>, Vec<Message>) {
        let start_a = 1_000_000_000u64;
        // t_a = t_b + offset + drift * (t_b - start_b), with start_b = b's clock at start_a.
        let start_b = start_a as f64 - offset;
        let to_b = |t_a: f64| start_b + (t_a - start_a as f64) / (1.0 + drift);
        let mut fwd = Vec::new();
        let mut back = Vec::new();
        for i in 0..n {
            let t = start_a + i * gap;
            // a writes at t; b's read ends lat + a little later (on a's clock).
            let jitter = (i * 7919 % 13) * 100;
            fwd.push(Message {
                sent: t,
                received: to_b((t + lat + jitter) as f64).round() as u64,
            });
            // b writes at t + gap / 2 (a's clock); a's read ends lat later.
            let s = t + gap / 2;
            back.push(Message {
                sent: to_b(s as f64).round() as u64,
                received: s + lat + jitter,
            });
        }
        (fwd, back)
    }

    fn start_b(offset: f64) -> u64 {
        (1_000_000_000f64 - offset) as u64
    }

    #[test]
    fn an_offset_is_found_within_its_bound() {
        let (f, b) = talk(3_700_000.0, 0.0, 20_000, 500, 1_000_000);
        let got = fit(&f, &b, start_b(3_700_000.0)).unwrap();
        assert!(!got.crossed);
        assert!(
            (got.offset - 3_700_000.0).abs() <= got.bound + 1.0,
            "{got:?}"
        );
        // Half the round trip: one latency (20 µs) plus the jitter (up to 1.2 µs).
        assert!(got.bound <= 21_300.0, "{got:?}");
        assert_eq!(got.messages, 1000);
    }

    #[test]
    fn a_negative_offset_and_a_drift_are_found() {
        // 50 ppm over 60 s of messages: the drift is known to a fraction of a ppm.
        let (f, b) = talk(-1.0e12, 50e-6, 5_000, 600, 100_000_000);
        let got = fit(&f, &b, start_b(-1.0e12)).unwrap();
        assert!(got.drift_known, "{got:?}");
        assert!((got.drift - 50e-6).abs() < 0.5e-6, "{got:?}");
        assert!((got.offset + 1.0e12).abs() <= got.bound + 1.0, "{got:?}");
        let (f, b) = talk(0.0, -50e-6, 5_000, 600, 100_000_000);
        let got = fit(&f, &b, start_b(0.0)).unwrap();
        assert!((got.drift + 50e-6).abs() < 0.5e-6, "{got:?}");
    }

    #[test]
    fn the_binding_messages_fit_as_all_and_their_parts_bind_alike() {
        let (fwd, back) = talk(-2.5e9, 30e-6, 40_000, 3_000, 7_000_000);
        let (bf, bb) = binding(&fwd, &back);
        assert!(
            bf.len() < 100 && bb.len() < 100,
            "{} {}",
            bf.len(),
            bb.len()
        );
        let all = fit(&fwd, &back, start_b(-2.5e9)).unwrap();
        let few = fit(&bf, &bb, start_b(-2.5e9)).unwrap();
        assert!((all.offset - few.offset).abs() < 1e-3, "{all:?} {few:?}");
        assert!((all.drift - few.drift).abs() < 1e-12 && (all.bound - few.bound).abs() < 1e-3);
        // In three parts, each part's binding messages, then theirs: the same set.
        let (mut f3, mut b3) = (Vec::new(), Vec::new());
        for k in 0..3 {
            let part =
                |v: &[Message]| -> Vec<Message> { v.iter().skip(k).step_by(3).copied().collect() };
            let (f, b) = binding(&part(&fwd), &part(&back));
            f3.extend(f);
            b3.extend(b);
        }
        assert_eq!(binding(&f3, &b3), (bf, bb));
    }

    #[test]
    fn one_direction_alone_fits_nothing() {
        let (f, _) = talk(0.0, 0.0, 5_000, 10, 1_000_000);
        assert_eq!(fit(&f, &[], 0), None);
    }

    #[test]
    fn contradicting_messages_are_flagged() {
        let (f, mut b) = talk(0.0, 0.0, 5_000, 10, 1_000_000);
        // A message received 1 ms before it was sent.
        b[3].received = b[3].sent - 1_000_000;
        let got = fit(&f, &b, 1_000_000_000).unwrap();
        assert!(got.crossed, "{got:?}");
        assert!(got.bound > 0.0);
    }

    #[test]
    fn hulls_keep_the_binding_points() {
        // Each message stands for the point (sent, received).
        let msgs: Vec<Message> = [(0, 0), (1, 5), (2, 1), (3, 4), (4, 0)]
            .into_iter()
            .map(|(sent, received)| Message { sent, received })
            .collect();
        let hull = |upper| -> Vec<(u64, u64)> {
            exact_hull(&msgs, |m| (m.sent, i128::from(m.received)), upper)
                .into_iter()
                .map(|m| (m.sent, m.received))
                .collect()
        };
        assert_eq!(hull(true), vec![(0, 0), (1, 5), (3, 4), (4, 0)]);
        assert_eq!(hull(false), vec![(0, 0), (4, 0)]);
    }
}
