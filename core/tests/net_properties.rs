//! Property tests of the network codec and sessions:
//!
//! * every message type, with random fields, encodes to bytes that frame
//!   and decode to the same value, and re-encode to the same bytes;
//! * a stream of messages fed to a session in random chunks gives the same
//!   events as fed whole (the parsers keep no hidden state);
//! * random bytes, and random mutations of a valid conversation, never make
//!   a session panic, and it consumes only bytes it was given.

use hurray_core::net::*;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
use proptest::prelude::*;

fn cases() -> u32 {
    if cfg!(miri) { 2 } else { 256 }
}

const DEVICES: [u8; 11] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 0xF0, 0xFE];
const PLAIN: [u8; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0x40];

/// A layout list's wire bytes and count from random choices.
fn layout_bytes(choices: &[(u8, Vec<u8>)]) -> Vec<u8> {
    let mut v = Vec::new();
    for (c, meta) in choices {
        if c % 3 == 0 {
            v.push(0xF0 + c % 15);
            v.extend_from_slice(&(meta.len() as u16).to_le_bytes());
            v.extend_from_slice(meta);
        } else {
            v.push(PLAIN[usize::from(*c) % PLAIN.len()]);
        }
    }
    v
}

fn roundtrip(m: &Message<'_>, stream: u32) {
    let mut buf = vec![0u8; m.encoded_len()];
    let n = m.encode(stream, &mut buf).unwrap();
    assert_eq!(n, buf.len());
    let Status::Complete(f) = Frame::parse(&buf, u32::MAX).unwrap() else {
        panic!()
    };
    assert_eq!((f.len(), f.stream_id()), (n, stream));
    let back = Message::decode(&f).unwrap();
    assert_eq!(&back, m);
    let mut again = vec![0u8; n];
    back.encode(stream, &mut again).unwrap();
    assert_eq!(again, buf);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn hello_request_error_ping_round_trip(
        max in MIN_MESSAGE_SIZE..=u32::MAX,
        caps in 0u64..16,
        layouts in prop::collection::vec((any::<u8>(), prop::collection::vec(any::<u8>(), 0..6)), 0..6),
        devs in prop::collection::vec(0usize..DEVICES.len(), 0..5),
        classes in prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 3, 0xF1]), 0..4),
        key in "[a-z/._0-9]{1,40}",
        device in 0usize..DEVICES.len(),
        align_log in 0u32..31,
        flags in 0u32..4,
        code in any::<u32>(),
        text in ".{0,80}",
        token in any::<u64>(),
        stream in any::<u32>(),
    ) {
        let caps = if caps & 8 != 0 { caps | 4 } else { caps };
        let lb = layout_bytes(&layouts);
        let list = LayoutList::parse(layouts.len() as u16, &lb).unwrap();
        let devices: Vec<u8> = devs.iter().map(|&i| DEVICES[i]).collect();
        let hello = Hello {
            protocol_version: 1,
            max_message_size: max,
            capabilities: Capabilities::from_bits(caps).unwrap(),
            layouts: list,
            devices: &devices,
            memory_classes: &classes,
        };
        roundtrip(&Message::ClientHello(hello), 0);
        roundtrip(&Message::ServerHello(hello), 0);
        let req = TensorRequest {
            key: &key,
            preferred_layouts: list,
            preferred_device: DEVICES[device],
            min_alignment: 1 << align_log,
            flags: RequestFlags::from_bits(flags).unwrap(),
        };
        roundtrip(&Message::TensorRequest(req), stream);
        let text: String = text.chars().take(60).collect();
        roundtrip(&Message::Error(ErrorMessage { code: ErrorCode::from_code(code), text: &text }), stream);
        roundtrip(&Message::Ping(Ping(token)), 0);
        roundtrip(&Message::Pong(Ping(token)), 0);
        roundtrip(&Message::TensorDataEnd, stream);
        roundtrip(&Message::TensorPutAck, stream);
    }

    #[test]
    fn data_descriptor_put_round_trip(
        dims in prop::collection::vec(0u64..6, 0..4),
        offset in any::<u64>(),
        bytes in prop::collection::vec(any::<u8>(), 0..64),
        key in "[a-z]{1,20}",
        stream in 1u32..,
    ) {
        roundtrip(&Message::TensorData(DataFrame { offset, data: &bytes }), stream);
        let n: u64 = dims.iter().product();
        let b = [BufferHandle::new(n * 4, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
        let mut d = [0u8; 256];
        let view = TensorDescriptor::row_major(ElementType::Float32, &dims, &b).encode_view(&mut d).unwrap();
        roundtrip(&Message::TensorDescriptor(DescriptorMessage::unsharded(view).unwrap()), stream);
        roundtrip(&Message::TensorPut(TensorPut { key: &key, descriptor: view, total_data_bytes: n * 4 }), stream);
    }
}

// --- sessions -------------------------------------------------------------------------------

fn server_config() -> ServerConfig<'static> {
    ServerConfig {
        hello: Hello {
            protocol_version: 1,
            max_message_size: 1024,
            capabilities: Capabilities::PARALLEL_STREAMS,
            layouts: LayoutList::EMPTY,
            devices: &[0],
            memory_classes: &[],
        },
        handshake_timeout: 100,
        idle_timeout: 100,
        request_timeout: 100,
    }
}

/// A well-behaved client's bytes: hello, a put of 40 bytes in frames,
/// a request, a ping.
fn conversation() -> Vec<u8> {
    let mut wire = Vec::new();
    let mut buf = [0u8; 512];
    let hello = Hello {
        max_message_size: 2048,
        ..server_config().hello
    };
    let n = Message::ClientHello(hello).encode(0, &mut buf).unwrap();
    wire.extend_from_slice(&buf[..n]);
    let b = [BufferHandle::new(40, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = [0u8; 128];
    let view = TensorDescriptor::row_major(ElementType::UInt8, &[40], &b)
        .encode_view(&mut d)
        .unwrap();
    let put = TensorPut {
        key: "k",
        descriptor: view,
        total_data_bytes: 40,
    };
    let n = Message::TensorPut(put).encode(3, &mut buf).unwrap();
    wire.extend_from_slice(&buf[..n]);
    for off in (0..40).step_by(16) {
        let end = (off + 16).min(40);
        let data = vec![off as u8; end - off];
        let n = Message::TensorData(DataFrame {
            offset: off as u64,
            data: &data,
        })
        .encode(3, &mut buf)
        .unwrap();
        wire.extend_from_slice(&buf[..n]);
    }
    let n = Message::TensorDataEnd.encode(3, &mut buf).unwrap();
    wire.extend_from_slice(&buf[..n]);
    let req = TensorRequest {
        key: "x",
        preferred_layouts: LayoutList::EMPTY,
        preferred_device: 0,
        min_alignment: 64,
        flags: RequestFlags::NONE,
    };
    let n = Message::TensorRequest(req).encode(5, &mut buf).unwrap();
    wire.extend_from_slice(&buf[..n]);
    let n = Message::Ping(Ping(9)).encode(0, &mut buf).unwrap();
    wire.extend_from_slice(&buf[..n]);
    wire
}

/// Feeds `wire` to a fresh server in chunks of the given sizes (cycled);
/// returns the events and whether it ended in a connection error. Bounded:
/// every call consumes or asks for more.
fn run_server(wire: &[u8], chunks: &[usize]) -> (Vec<String>, Option<SessionError>) {
    let mut s = ServerSession::<4>::new(server_config(), 0);
    let mut events = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut fed = 0;
    let mut out = vec![0u8; s.max_control_len()];
    for (i, step) in (0..).zip(chunks.iter().cycle()) {
        if fed >= wire.len() && i > wire.len() * 4 + 8 {
            break;
        }
        let take = (*step).max(1).min(wire.len() - fed);
        pending.extend_from_slice(&wire[fed..fed + take]);
        fed += take;
        loop {
            match s.handle(1, &pending) {
                Ok(Status::Complete((e, used))) => {
                    assert!(used <= pending.len() && used > 0 || pending.is_empty());
                    events.push(format!("{e:?}"));
                    pending.drain(..used);
                    if pending.is_empty() {
                        break;
                    }
                }
                Ok(Status::Partial { needed }) => {
                    assert!(needed > pending.len());
                    break;
                }
                Err(e) => return (events, Some(e)),
            }
        }
        while s.poll_transmit(&mut out).unwrap().is_some() {}
        if fed >= wire.len() && pending.is_empty() {
            break;
        }
    }
    (events, None)
}

#[test]
fn a_valid_conversation_gives_the_expected_events() {
    let (events, err) = run_server(&conversation(), &[usize::MAX]);
    assert_eq!(err, None);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e.split(['(', ' ']).next().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "Hello", "PutStart", "PutData", "PutData", "PutData", "PutEnd", "Request", "Ping"
        ]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn chunking_does_not_change_the_events(chunks in prop::collection::vec(1usize..40, 1..8)) {
        let wire = conversation();
        prop_assert_eq!(run_server(&wire, &chunks), run_server(&wire, &[usize::MAX]));
    }

    #[test]
    fn random_bytes_never_panic_a_session(body in prop::collection::vec(any::<u8>(), 0..if cfg!(miri) { 64 } else { 600 }), after_hello in any::<bool>()) {
        let mut wire = if after_hello { conversation()[..40].to_vec() } else { Vec::new() };
        wire.extend_from_slice(&body);
        let _ = run_server(&wire, &[7]);
        // The client side, after its own hello.
        let mut c = ClientSession::<4>::new(ClientConfig { hello: server_config().hello, handshake_timeout: 10, idle_timeout: 10, request_timeout: 10 }, 0);
        let mut out = vec![0u8; c.max_control_len()];
        let _ = c.poll_transmit(&mut out);
        let mut rest: &[u8] = &body;
        for _ in 0..body.len() + 1 {
            match c.handle(1, rest) {
                Ok(Status::Complete((_, used))) if used > 0 => rest = &rest[used..],
                _ => break,
            }
        }
        let _ = c.handle_timeout(50);
    }

    #[test]
    fn mutated_conversations_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6)) {
        let mut wire = conversation();
        for (i, b) in flips {
            let at = i.index(wire.len());
            wire[at] ^= b | 1;
        }
        let (events, _) = run_server(&wire, &[13]);
        // Every event consumed a whole message: 12 bytes at least.
        prop_assert!(events.len() <= wire.len() / 12);
    }
}
