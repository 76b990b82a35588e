//! Several machines on one: network namespaces joined by veth links are the hosts, and time
//! namespaces give each a known monotonic clock offset, so that the clocks `scalpel infer`
//! aligns have a known truth. Needs root, `ip` (iproute2) and `unshare` (util-linux).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::scalpel;

/// Why the machines cannot be made here, or `None` when they can.
pub fn missing() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network and time namespaces)".into());
    }
    for (tool, package) in [("ip", "iproute2"), ("unshare", "util-linux")] {
        let found = Command::new(tool)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok();
        if !found {
            return Some(format!("needs `{tool}` (apt-get install {package})"));
        }
    }
    None
}

/// Network namespaces with veth links between them, removed when dropped.
pub struct Net {
    names: Vec<String>,
    /// This process's id and the net's number in it: every name the net makes carries it, so
    /// that tests side by side (in one process or several) never meet.
    tag: String,
}

/// Nets made so far by this process.
static NETS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("ip runs");
    assert!(
        o.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
}

impl Net {
    /// Namespaces named `sc<tag><name>` for each name.
    pub fn new(names: &[&str]) -> Net {
        let n = NETS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = format!("{}n{n}", std::process::id() % 100_000);
        let names: Vec<String> = names.iter().map(|n| format!("sc{tag}{n}")).collect();
        let net = Net { names, tag };
        for n in &net.names {
            ip(&["netns", "add", n]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
        }
        net
    }

    /// The namespace of host `i`.
    pub fn ns(&self, i: usize) -> &str {
        &self.names[i]
    }

    /// A link between hosts `a` and `b` on subnet `10.<subnet>.0.0/24`, `a` at `.1`, `b` at `.2`.
    pub fn link(&self, a: usize, b: usize, subnet: u8) {
        // At most 15 bytes: v, 5 digits, n, a digit or two, s, 3 digits, a or b.
        let tag = &self.tag;
        let (va, vb) = (format!("v{tag}s{subnet}a"), format!("v{tag}s{subnet}b"));
        ip(&["link", "add", &va, "type", "veth", "peer", "name", &vb]);
        for (v, ns, host) in [(&va, &self.names[a], 1), (&vb, &self.names[b], 2)] {
            ip(&["link", "set", v, "netns", ns]);
            let addr = format!("10.{subnet}.0.{host}/24");
            ip(&["-n", ns, "addr", "add", &addr, "dev", v]);
            ip(&["-n", ns, "link", "set", v, "up"]);
        }
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in &self.names {
            // Deleting a namespace deletes the veth ends in it, and so their peers.
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

/// `scalpel record -o dir -- prog args` run on `host`, its stdout piped.
pub fn record_on(
    net: &Net,
    host: usize,
    clock_ahead_s: i64,
    dir: &Path,
    prog: &Path,
    args: &[&str],
    env: &[(&str, &Path)],
) -> Child {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", net.ns(host)]);
    if clock_ahead_s != 0 {
        c.arg("unshare")
            .arg("--time")
            .arg(format!("--monotonic={clock_ahead_s}"));
    }
    c.arg(scalpel())
        .arg("record")
        .arg("-o")
        .arg(dir)
        .arg("--")
        .arg(prog)
        .args(args)
        .stdout(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().expect("ip netns exec runs")
}

/// The first line `child` prints that starts with `prefix` (stdout), waiting at most `limit`.
pub fn line_from(child: &mut Child, prefix: &str, limit: Duration) -> String {
    let out = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    let wanted = prefix.to_string();
    std::thread::spawn(move || {
        let mut found = false;
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if !found && line.starts_with(&wanted) {
                found = true;
                let _ = tx.send(line.clone());
            }
            println!("{line}");
        }
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("no line starting {prefix:?} within {limit:?}"))
}

/// Waits for `child` at most `limit`, killing it past that; panics unless it exits 0.
pub fn wait_ok(child: &mut Child, what: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            assert!(s.success(), "{what} failed: {s}");
            return;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `tasks` with their times on the reference machine's clock: a truth file's times are each on
/// its own machine's clock, the graph's on the first machine's.
pub fn on_reference(
    graph: &scalpel_model::graph::Graph,
    tasks: &[crate::score::TruthTask],
) -> Vec<crate::score::TruthTask> {
    tasks
        .iter()
        .map(|t| {
            let host = graph
                .processes
                .iter()
                .find(|p| p.pid == t.pid)
                .and_then(|p| graph.hosts.get(p.host.index()));
            let shift = |ns: u64| host.map_or(ns, |h| h.on_reference(ns));
            crate::score::TruthTask {
                start_ns: shift(t.start_ns),
                end_ns: shift(t.end_ns),
                ..t.clone()
            }
        })
        .collect()
}
