//! The knots that bend a fitted clock's straight line towards CLOCK_MONOTONIC, one in each
//! millisecond that holds calibration points (see `Clock::fitted`).
//!
//! A point is a CLOCK_MONOTONIC reading taken between two TSC reads; its ticks are their middle,
//! so it is off by up to half the bracket's width, which the agent lets reach hundreds of
//! nanoseconds. Where the points record their widths, a knot trusts them as far as their widths
//! allow: a millisecond with a point as tight as the trace's usual ones is bent to the median of
//! its tightest points; one with only wide points is given the line the tight knots on either
//! side draw through it, moved only as far as it must to pass through every point's bracket.
//! Why: on a loaded machine one wide point alone in a quiet millisecond set that millisecond's
//! knot, and every event in it moved by 100 ns and more, which put a truth span of the
//! generated corpus before the call it followed. Traces without widths (earlier agents) keep
//! the median of all of a millisecond's points.

use super::types::Calibration;

/// A point: ticks, CLOCK_MONOTONIC ns, bracket width in ticks (`u64::MAX` when unknown).
type Point = (u64, u64, u64);

/// The knots over a line (`own_ns`, at `ticks_per_sec`) for `points` in stretches of `span`
/// ticks: each stretch's middle (ticks) and its offset from the line there (ns).
pub(super) fn knots(
    points: &[Calibration],
    span: u64,
    own_ns: impl Fn(u64) -> u64,
    ticks_per_sec: u64,
) -> Vec<(u64, i128)> {
    let mut sorted: Vec<Point> = points
        .iter()
        .map(|p| (p.ticks, p.mono_ns, p.width.unwrap_or(u64::MAX)))
        .collect();
    sorted.sort_unstable();
    let Some(&(t0, _, _)) = sorted.first() else {
        return Vec::new();
    };
    let span = span.max(1);
    let off = |p: &Point| i128::from(p.1) - i128::from(own_ns(p.0));
    let groups: Vec<&[Point]> = sorted
        .chunk_by(|a, b| (a.0 - t0) / span == (b.0 - t0) / span)
        .collect();
    let tight = usual_width(&sorted).map(|w| w.saturating_mul(2));
    // First the stretches with a point as tight as the trace's usual ones (every stretch where
    // no width is known).
    let firm: Vec<Option<i128>> = groups
        .iter()
        .map(|g| {
            let narrowest = g.iter().map(|p| p.2).min().unwrap_or(u64::MAX);
            tight
                .is_none_or(|t| narrowest <= t)
                .then(|| median_of_tightest(g, narrowest, off))
        })
        .collect();
    let mids: Vec<u64> = groups
        .iter()
        .map(|g| t0 + (g[0].0 - t0) / span * span + span / 2)
        .collect();
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let o = firm[i].unwrap_or_else(|| {
                let drawn = between(&mids, &firm, i);
                within_brackets(g, drawn, ticks_per_sec, off)
                    .unwrap_or_else(|| median_of_tightest(g, u64::MAX, off))
            });
            (mids[i], o)
        })
        .collect()
}

/// The median width of the points that record one.
fn usual_width(points: &[Point]) -> Option<u64> {
    let mut w: Vec<u64> = points
        .iter()
        .map(|p| p.2)
        .filter(|&w| w != u64::MAX)
        .collect();
    w.sort_unstable();
    w.get(w.len() / 2).copied()
}

/// The median offset of the points at most twice as wide as `narrowest` (all when it is
/// unknown).
fn median_of_tightest(g: &[Point], narrowest: u64, off: impl Fn(&Point) -> i128) -> i128 {
    let mut o: Vec<i128> = g
        .iter()
        .filter(|p| narrowest == u64::MAX || p.2 <= narrowest.saturating_mul(2))
        .map(&off)
        .collect();
    if o.is_empty() {
        o = g.iter().map(&off).collect();
    }
    o.sort_unstable();
    o[o.len() / 2]
}

/// The offset the firm knots on either side of stretch `i` draw through its middle: their line,
/// or the one on the only side that has one; `None` without any.
fn between(mids: &[u64], firm: &[Option<i128>], i: usize) -> Option<i128> {
    let before = (0..i).rev().find_map(|j| firm[j].map(|o| (mids[j], o)));
    let after = (i + 1..firm.len()).find_map(|j| firm[j].map(|o| (mids[j], o)));
    match (before, after) {
        (Some((ta, oa)), Some((tb, ob))) => {
            let (dt, di) = (i128::from(tb - ta), i128::from(mids[i] - ta));
            Some(oa + (ob - oa) * di / dt.max(1))
        }
        (Some((_, o)), None) | (None, Some((_, o))) => Some(o),
        (None, None) => None,
    }
}

/// `drawn` moved into every known bracket of the stretch's points (each point's offset, give
/// or take half its width in nanoseconds); `None` when there is no `drawn`, or the brackets
/// have no offset in common.
fn within_brackets(
    g: &[Point],
    drawn: Option<i128>,
    ticks_per_sec: u64,
    off: impl Fn(&Point) -> i128,
) -> Option<i128> {
    let drawn = drawn?;
    let (mut lo, mut hi) = (i128::MIN, i128::MAX);
    for p in g.iter().filter(|p| p.2 != u64::MAX) {
        // Rounded up: a nanosecond more is no harm, one less could refuse the true offset.
        let half = i128::from(p.2) * 1_000_000_000 / (2 * i128::from(ticks_per_sec.max(1))) + 1;
        let o = off(p);
        lo = lo.max(o - half);
        hi = hi.min(o + half);
    }
    (lo <= hi).then(|| drawn.clamp(lo, hi))
}
