//! Property tests: what the writer writes, the reader reads back unchanged.

use std::collections::HashMap;
use std::net::SocketAddr;

use proptest::prelude::*;
use scalpel_model::format::{flags, ChanKind, ObjKind, Op};
use scalpel_model::read::{
    decode_file, Calibration, Clock, Endpoint, Event, Header, Identity, ObjectDef, ObjectRef,
};
use scalpel_model::record::RawEvent;
use scalpel_model::write::TraceWriter;

#[derive(Clone, Debug)]
enum Step {
    Event(RawEvent),
    Object(ObjectDef),
    Reset,
    Calibration(u64, u64, Option<u64>),
    Lost(u64),
    ThreadName(u64, String),
}

fn endpoint() -> impl Strategy<Value = Endpoint> {
    prop_oneof![
        Just(Endpoint::None),
        (any::<u64>(), any::<u64>()).prop_map(|(dev, ino)| Endpoint::Inode { dev, ino }),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Endpoint::Path),
        (any::<u64>(), any::<u64>()).prop_map(|(pid, counter)| Endpoint::Local { pid, counter }),
        any::<SocketAddr>()
            .prop_map(|a| match a {
                // The format carries no flow info or scope id.
                SocketAddr::V6(v6) => SocketAddr::new((*v6.ip()).into(), v6.port()),
                a => a,
            })
            .prop_map(Endpoint::Inet),
    ]
}

fn object() -> impl Strategy<Value = ObjectDef> {
    (
        1u64..8,
        1u8..=12,
        any::<u64>(),
        any::<u8>(),
        any::<u64>(),
        endpoint(),
        endpoint(),
    )
        .prop_map(|(index, kind, key, chan, channel_key, sender, receiver)| {
            let identity = match ObjKind::from_code(kind) {
                Some(ObjKind::Stream) => Identity::Stream {
                    chan,
                    channel_key,
                    sender,
                    receiver,
                },
                Some(ObjKind::Endpoint) => Identity::Endpoint { chan, ep: sender },
                Some(k) if k.process_scoped() && k != ObjKind::Thread && key % 2 == 1 => {
                    Identity::Shared
                }
                _ => Identity::None,
            };
            ObjectDef {
                index,
                kind,
                key,
                identity,
            }
        })
}

fn raw_event() -> impl Strategy<Value = RawEvent> {
    use proptest::option::of as opt;
    (
        (any::<u8>(), 0u64..1 << 40, 0u64..1 << 40, opt(0u64..10)),
        (
            opt(any::<i64>()),
            opt(any::<i64>()),
            opt(any::<u64>()),
            opt(0u64..1 << 40),
        ),
        (
            opt(any::<u64>()),
            opt(any::<u64>()),
            opt(any::<u64>()),
            opt(any::<u64>()),
        ),
    )
        .prop_map(
            |((op, dt, dur, obj), (seq_delta, result, fd, cpu), (offset, aux, aux2, stack))| {
                RawEvent {
                    op,
                    dt,
                    dur,
                    obj,
                    seq_delta,
                    result,
                    fd,
                    offset,
                    aux,
                    aux2,
                    stack,
                    cpu,
                }
            },
        )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => raw_event().prop_map(Step::Event),
        3 => object().prop_map(Step::Object),
        1 => Just(Step::Reset),
        1 => (any::<u64>(), any::<u64>(), any::<Option<u64>>())
            .prop_map(|(t, m, width)| Step::Calibration(t, m, width)),
        1 => any::<u64>().prop_map(Step::Lost),
        1 => (any::<u64>(), "[a-z]{0,15}").prop_map(|(t, n)| Step::ThreadName(t, n)),
    ]
}

/// What the reader should produce, computed independently of it.
fn expected(h: &Header, steps: &[Step]) -> (Vec<Event>, Vec<ObjectDef>, u64) {
    let cals: Vec<Calibration> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Calibration(ticks, mono_ns, width) => Some(Calibration {
                ticks: *ticks,
                mono_ns: *mono_ns,
                width: *width,
                offset: 0,
            }),
            _ => None,
        })
        .collect();
    let clock = Clock::new(h, &cals);
    let mut table: HashMap<u64, (u8, u64, u64)> = HashMap::new();
    let (mut ticks, mut events, mut objects, mut lost) = (h.clock0, vec![], vec![], 0u64);
    // CPU deltas add up over the events that carry one.
    let mut cpu = 0u64;
    for s in steps {
        match s {
            Step::Event(r) => {
                ticks = ticks.wrapping_add(r.dt);
                let ent = r.obj.and_then(|i| table.get_mut(&i).map(|e| (i, e)));
                // An event on an undefined index has no base for its delta: no sequence number.
                let (obj, seq) = match ent {
                    Some((index, (kind, key, last))) => (
                        Some(ObjectRef {
                            kind: *kind,
                            key: *key,
                            index,
                        }),
                        r.seq_delta.map(|d| {
                            *last = last.wrapping_add(d as u64);
                            *last
                        }),
                    ),
                    None => (None, None),
                };
                let cpu_ns = r.cpu.map(|d| {
                    cpu = cpu.wrapping_add(d);
                    cpu
                });
                events.push(Event {
                    op: Op::from_u8(r.op),
                    op_code: r.op,
                    ticks,
                    ts_ns: clock.ns(ticks),
                    dur_ticks: r.dur,
                    // The distance between the converted start and end.
                    dur_ns: clock
                        .ns(ticks.saturating_add(r.dur))
                        .saturating_sub(clock.ns(ticks)),
                    obj,
                    seq,
                    result: r.result,
                    fd: r.fd,
                    offset: r.offset,
                    aux: r.aux,
                    aux2: r.aux2,
                    stack: r.stack,
                    cpu_ns,
                    file_offset: 0,
                    ready: None,
                });
            }
            Step::Object(o) => {
                table.insert(o.index, (o.kind, o.key, 0));
                objects.push(o.clone());
            }
            Step::Reset => table.clear(),
            Step::Lost(n) => lost = lost.saturating_add(*n),
            Step::Calibration(..) | Step::ThreadName(..) => {}
        }
    }
    (events, objects, lost)
}

proptest! {
    #[test]
    fn written_files_read_back(
        steps in proptest::collection::vec(step(), 0..60),
        tsc in any::<bool>(),
        clock0 in any::<u64>(),
        mono0 in any::<u64>(),
        tps in any::<u64>(),
        dropped in any::<u64>(),
        name in "[a-z]{0,16}",
    ) {
        let mut h = Header::thread(42, 43);
        h.flags = if tsc { flags::CLOCK_TSC } else { 0 };
        (h.clock0, h.mono0, h.ticks_per_sec, h.dropped) = (clock0, mono0, tps, dropped);
        h.thread_name = name.into_bytes();
        h.exe = b"/usr/bin/prog".to_vec();
        let mut w = TraceWriter::new(h.clone());
        for s in &steps {
            match s {
                Step::Event(r) => w.event(r),
                Step::Object(o) => w.object(o.index, o.kind, o.key, &o.identity),
                Step::Reset => w.object_reset(),
                Step::Calibration(t, m, width) => w.calibration(*t, *m, *width),
                Step::Lost(n) => w.lost(*n),
                Step::ThreadName(t, n) => w.thread_name(*t, n.as_bytes()),
            };
        }
        let bytes = w.to_bytes();
        let t = decode_file("x.trace".as_ref(), &bytes).unwrap();
        h.committed = w.records().len() as u64;
        prop_assert_eq!(&t.header, &h);
        let (mut events, objects, lost) = expected(&h, &steps);
        for (e, got) in events.iter_mut().zip(&t.events) {
            e.file_offset = got.file_offset;
        }
        prop_assert_eq!(&t.events, &events);
        prop_assert_eq!(&t.objects, &objects);
        prop_assert_eq!(t.lost, lost);
        prop_assert_eq!(t.lost_events(), lost.saturating_add(dropped));
        prop_assert_eq!(t.decoded_len, h.committed);
        let names: Vec<&str> = steps.iter().filter_map(|s| match s {
            Step::ThreadName(_, n) => Some(n.as_str()),
            _ => None,
        }).collect();
        prop_assert_eq!(t.thread_names.iter().map(|n| n.name.as_str()).collect::<Vec<_>>(), names);
        // Only undefined object references may warn, and never stop decoding.
        for warning in &t.warnings {
            prop_assert!(warning.to_string().contains("no OBJECT record defined"), "{}", warning);
        }
    }
}

#[test]
fn metadata_records_round_trip() {
    let mut w = TraceWriter::new(Header::process(7));
    w.cmdline(&["prog", "--flag", ""])
        .exe(b"/opt/prog")
        .maps(5, b"1000-2000 r-xp 00000000 08:01 99 /opt/prog\n");
    let t = decode_file("process.trace".as_ref(), &w.to_bytes()).unwrap();
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let args = t.cmdline.unwrap();
    assert_eq!(args, ["prog", "--flag", ""]);
    assert_eq!(t.exe.unwrap().to_str(), Some("/opt/prog"));
    assert_eq!(t.maps.len(), 1);
    assert_eq!((t.maps[0].ticks, t.maps[0].ts_ns), (5, 5));
    assert_eq!(t.maps[0].entries[0].path.as_deref(), Some("/opt/prog"));
}

#[test]
fn identities_display_well() {
    let tcp = Identity::Stream {
        chan: ChanKind::Tcp.code(),
        channel_key: 1,
        sender: Endpoint::Inet("127.0.0.1:5000".parse().unwrap()),
        receiver: Endpoint::Inet("127.0.0.1:41234".parse().unwrap()),
    };
    assert_eq!(tcp.to_string(), "tcp 127.0.0.1:5000->127.0.0.1:41234");
    let pipe = Identity::Stream {
        chan: ChanKind::Pipe.code(),
        channel_key: 2,
        sender: Endpoint::Inode { dev: 0, ino: 1234 },
        receiver: Endpoint::Inode { dev: 0, ino: 1234 },
    };
    assert_eq!(pipe.to_string(), "pipe ino 1234");
    let unix = Identity::Endpoint {
        chan: ChanKind::Unix.code(),
        ep: Endpoint::Path(b"\0abstract".to_vec()),
    };
    assert_eq!(unix.to_string(), "unix @abstract");
    let ev = Identity::Endpoint {
        chan: ChanKind::Eventfd.code(),
        ep: Endpoint::Local { pid: 9, counter: 3 },
    };
    assert_eq!(ev.to_string(), "eventfd pid 9 #3");
    let v6 = Endpoint::Inet("[::1]:80".parse().unwrap());
    assert_eq!(v6.to_string(), "[::1]:80");
    assert_eq!(
        Endpoint::Inode { dev: 0x801, ino: 5 }.to_string(),
        "ino 5 dev 8:1"
    );
}
