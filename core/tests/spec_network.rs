//! One test per MUST of `docs/spec/network.md`, named after its identifier.
//! Hostile messages are assembled byte by byte here (`msg`, `hello_payload`,
//! descriptors by `common::Desc`), never by the crate's encoders; each test
//! shows what is accepted and the exact error (kind, offset, `ERROR` code)
//! of what is refused, and drives the session machines message by message
//! with time passed in.

use hurray_core::net::*;

mod common;
use common::{Desc, cpu, entry, lay, ty};

// --- bytes, by hand -------------------------------------------------------------

fn msg(kind: u32, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&kind.to_le_bytes());
    v.extend_from_slice(&stream.to_le_bytes());
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

fn hello_payload(
    version: u32,
    max: u32,
    caps: u64,
    layouts: &[u8],
    n_layouts: u16,
    devices: &[u8],
    classes: Option<&[u8]>,
) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&version.to_le_bytes());
    v.extend_from_slice(&max.to_le_bytes());
    v.extend_from_slice(&caps.to_le_bytes());
    v.extend_from_slice(&n_layouts.to_le_bytes());
    v.extend_from_slice(layouts);
    v.extend_from_slice(&(devices.len() as u16).to_le_bytes());
    v.extend_from_slice(devices);
    if let Some(c) = classes {
        v.extend_from_slice(&(c.len() as u16).to_le_bytes());
        v.extend_from_slice(c);
    }
    v
}

fn client_hello(version: u32, max: u32, devices: &[u8]) -> Vec<u8> {
    msg(
        1,
        0,
        &hello_payload(version, max, 0, &[0x01], 1, devices, Some(&[0])),
    )
}

fn request_payload(key: &str, layouts: &[u8], device: u8, align: u32, flags: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(key.len() as u32).to_le_bytes());
    v.extend_from_slice(key.as_bytes());
    v.extend_from_slice(&(layouts.len() as u16).to_le_bytes());
    v.extend_from_slice(layouts);
    v.push(device);
    v.extend_from_slice(&align.to_le_bytes());
    v.extend_from_slice(&flags.to_le_bytes());
    v
}

fn transport(total: u64, index: u32, shards: u32) -> Vec<u8> {
    let mut v = total.to_le_bytes().to_vec();
    v.extend_from_slice(&index.to_le_bytes());
    v.extend_from_slice(&shards.to_le_bytes());
    v
}

/// A TENSOR_DESCRIPTOR payload: a u8 row-major tensor of `n` bytes.
fn descriptor_payload(n: u64) -> Vec<u8> {
    let mut v = Desc::dense(ty::U8, &[n], n).bytes();
    v.extend_from_slice(&transport(n, 0, 1));
    v
}

fn put_payload(key: &str, desc: &[u8], total: u64) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&(key.len() as u32).to_le_bytes());
    v.extend_from_slice(key.as_bytes());
    v.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    v.extend_from_slice(desc);
    v.extend_from_slice(&total.to_le_bytes());
    v
}

fn data(offset: u64, bytes: &[u8]) -> Vec<u8> {
    let mut v = offset.to_le_bytes().to_vec();
    v.extend_from_slice(bytes);
    v
}

fn error_payload(code: u32, text: &str) -> Vec<u8> {
    let mut v = code.to_le_bytes().to_vec();
    v.extend_from_slice(&(text.len() as u32).to_le_bytes());
    v.extend_from_slice(text.as_bytes());
    v
}

fn decode(bytes: &[u8]) -> Result<Message<'_>, NetError> {
    match Frame::parse(bytes, u32::MAX)? {
        Status::Complete(f) => Message::decode(&f),
        Status::Partial { needed } => panic!("partial, {needed} needed"),
    }
}

fn reject(bytes: &[u8], offset: u32, kind: NetErrorKind) {
    let e = decode(bytes).unwrap_err();
    assert_eq!((e.offset(), e.kind()), (offset, kind), "{bytes:02x?}");
}

// --- sessions ---------------------------------------------------------------------

const MAX: u32 = 4096;

fn server_config(caps: Capabilities) -> ServerConfig<'static> {
    ServerConfig {
        hello: Hello {
            protocol_version: PROTOCOL_VERSION,
            max_message_size: MAX,
            capabilities: caps,
            layouts: LayoutList::tags(&[0x01, 0x02]).unwrap(),
            devices: &[0x00, 0x01],
            memory_classes: &[0x00],
        },
        handshake_timeout: 1_000,
        idle_timeout: 10_000,
        request_timeout: 5_000,
    }
}

fn client_config(devices: &'static [u8]) -> ClientConfig<'static> {
    ClientConfig {
        hello: Hello {
            protocol_version: PROTOCOL_VERSION,
            max_message_size: MAX,
            capabilities: Capabilities::NONE,
            layouts: LayoutList::tags(&[0x01]).unwrap(),
            devices,
            memory_classes: &[],
        },
        handshake_timeout: 1_000,
        idle_timeout: 10_000,
        request_timeout: 5_000,
    }
}

type Server = ServerSession<'static, 4>;
type Client = ClientSession<'static, 4>;

/// What a session said about one message, owned.
#[derive(Debug, PartialEq)]
enum Said {
    Event(String),
    Fatal(SessionError),
}

fn server_feed(s: &mut Server, now: u64, bytes: &[u8]) -> Said {
    match s.handle(now, bytes) {
        Ok(Status::Complete((e, used))) => {
            assert_eq!(used, bytes.len(), "one message at a time");
            Said::Event(format!("{e:?}"))
        }
        Ok(Status::Partial { needed }) => Said::Event(format!("Partial({needed})")),
        Err(e) => Said::Fatal(e),
    }
}

fn client_feed(c: &mut Client, now: u64, bytes: &[u8]) -> Said {
    match c.handle(now, bytes) {
        Ok(Status::Complete((e, used))) => {
            assert_eq!(used, bytes.len());
            Said::Event(format!("{e:?}"))
        }
        Ok(Status::Partial { needed }) => Said::Event(format!("Partial({needed})")),
        Err(e) => Said::Fatal(e),
    }
}

/// Every control message the server owes, as (type, stream, payload).
fn server_out(s: &mut Server) -> Vec<(u32, u32, Vec<u8>)> {
    let mut out = vec![0u8; s.max_control_len()];
    let mut v = Vec::new();
    while let Some(n) = s.poll_transmit(&mut out).unwrap() {
        v.push(split(&out[..n]));
    }
    v
}

fn client_out(c: &mut Client) -> Vec<(u32, u32, Vec<u8>)> {
    let mut out = vec![0u8; c.max_control_len()];
    let mut v = Vec::new();
    while let Some(n) = c.poll_transmit(&mut out).unwrap() {
        v.push(split(&out[..n]));
    }
    v
}

fn split(b: &[u8]) -> (u32, u32, Vec<u8>) {
    let t = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let s = u32::from_le_bytes(b[4..8].try_into().unwrap());
    let n = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
    assert_eq!(b.len(), 12 + n);
    (t, s, b[12..].to_vec())
}

/// The ERROR codes among `out`, with their streams.
fn errors(out: &[(u32, u32, Vec<u8>)]) -> Vec<(u32, u32)> {
    out.iter()
        .filter(|m| m.0 == 9)
        .map(|m| (m.1, u32::from_le_bytes(m.2[0..4].try_into().unwrap())))
        .collect()
}

fn open_server(caps: Capabilities) -> Server {
    let mut s = Server::new(server_config(caps), 0);
    assert!(
        matches!(server_feed(&mut s, 1, &client_hello(1, MAX, &[0x00])), Said::Event(e) if e.starts_with("Hello"))
    );
    let out = server_out(&mut s);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].0, out[0].1), (2, 0));
    s
}

fn server_hello_bytes(version: u32, caps: u64) -> Vec<u8> {
    msg(
        2,
        0,
        &hello_payload(version, MAX, caps, &[0x01], 1, &[0x00], Some(&[0])),
    )
}

fn open_client(devices: &'static [u8], caps: u64) -> Client {
    let mut c = Client::new(client_config(devices), 0);
    let out = client_out(&mut c);
    assert_eq!((out[0].0, out[0].1), (1, 0));
    assert!(
        matches!(client_feed(&mut c, 1, &server_hello_bytes(1, caps)), Said::Event(e) if e.starts_with("Connected"))
    );
    c
}

fn req(key: &str, device: u8, flags: RequestFlags) -> TensorRequest<'_> {
    TensorRequest {
        key,
        preferred_layouts: LayoutList::EMPTY,
        preferred_device: device,
        min_alignment: 64,
        flags,
    }
}

fn owned_descriptor(n: u64) -> Vec<u8> {
    Desc::dense(ty::U8, &[n], n).bytes()
}

// --- framing ----------------------------------------------------------------------

#[test]
fn np_frame_1_header_is_twelve_bytes_and_payload_is_exactly_its_length() {
    let ping = msg(0x0A, 0, &7u64.to_le_bytes());
    let mut stream = ping.clone();
    stream.extend_from_slice(&msg(0x0B, 0, &9u64.to_le_bytes()));
    // Any split gives Partial until the message is whole, then the same frame.
    for cut in 0..ping.len() {
        let needed = if cut < 12 { 12 } else { 20 };
        assert_eq!(
            Frame::parse(&stream[..cut], 64),
            Ok(Status::Partial { needed })
        );
    }
    let f = Frame::parse(&stream, 64).unwrap().complete().unwrap();
    assert_eq!((f.message_type(), f.stream_id(), f.len()), (0x0A, 0, 20));
    assert_eq!(Message::decode(&f), Ok(Message::Ping(Ping(7))));
    let g = Frame::parse(&stream[f.len()..], 64)
        .unwrap()
        .complete()
        .unwrap();
    assert_eq!(Message::decode(&g), Ok(Message::Pong(Ping(9))));
}

#[test]
fn np_frame_2_oversized_payload_is_refused_before_it_is_read() {
    // A header announcing 4 GiB - 1 on stream 5, and nothing after it.
    let header = [3, 0, 0, 0, 5, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF];
    let e = Frame::parse(&header, MAX).unwrap_err();
    assert_eq!(
        (e.offset(), e.kind()),
        (
            8,
            NetErrorKind::TooLarge {
                length: u32::MAX,
                max: MAX
            }
        )
    );
    // A payload of exactly the maximum is fine.
    let ok = [3, 0, 0, 0, 5, 0, 0, 0, 0, 0x10, 0, 0];
    assert_eq!(
        Frame::parse(&ok, MAX),
        Ok(Status::Partial { needed: 12 + 4096 })
    );
    // The session answers MESSAGE_TOO_LARGE on that stream and closes.
    let mut s = open_server(Capabilities::NONE);
    let Said::Fatal(err) = server_feed(&mut s, 2, &header) else {
        panic!()
    };
    assert_eq!(err.error_code(), ErrorCode::MessageTooLarge);
    assert_eq!(errors(&server_out(&mut s)), [(5, 7)]);
    assert!(s.is_closed());
    // The client too.
    let mut c = open_client(&[0], 0);
    assert!(
        matches!(client_feed(&mut c, 2, &header), Said::Fatal(e) if e.error_code() == ErrorCode::MessageTooLarge)
    );
    assert!(c.is_closed());
}

#[test]
fn np_frame_3_unknown_types_are_refused_and_the_stream_closed() {
    for t in [0u32, 0x0E, 0xF0, 0xFE, 0xFF, 0x1_0001] {
        reject(&msg(t, 3, &[1, 2, 3]), 0, NetErrorKind::UnknownType(t));
    }
    // On a stream: ERROR INVALID_MESSAGE there, the connection goes on.
    let mut s = open_server(Capabilities::NONE);
    let Said::Event(e) = server_feed(&mut s, 2, &msg(0xF3, 9, &[0; 5])) else {
        panic!()
    };
    assert!(e.starts_with("StreamError"), "{e}");
    assert_eq!(errors(&server_out(&mut s)), [(9, 6)]);
    assert!(s.is_established());
    let ping = msg(0x0A, 0, &1u64.to_le_bytes());
    assert!(matches!(server_feed(&mut s, 3, &ping), Said::Event(e) if e.starts_with("Ping")));
    // On stream 0, or before the hello: the connection closes.
    assert!(matches!(
        server_feed(&mut s, 4, &msg(0xF3, 0, &[])),
        Said::Fatal(_)
    ));
    let mut fresh = Server::new(server_config(Capabilities::NONE), 0);
    assert!(matches!(
        server_feed(&mut fresh, 1, &msg(0x77, 1, &[])),
        Said::Fatal(_)
    ));
    assert_eq!(errors(&server_out(&mut fresh)), [(1, 6)]);
}

// --- streams ---------------------------------------------------------------------------

#[test]
fn np_stream_1_connection_messages_on_stream_zero_others_elsewhere() {
    // A request on stream 0: the connection closes with INVALID_MESSAGE.
    let mut s = open_server(Capabilities::NONE);
    let r = msg(3, 0, &request_payload("a", &[], 0, 64, 0));
    assert!(
        matches!(server_feed(&mut s, 2, &r), Said::Fatal(e) if e.error_code() == ErrorCode::InvalidMessage)
    );
    assert_eq!(errors(&server_out(&mut s)), [(0, 6)]);
    // A PING on stream 4: that stream is answered with ERROR.
    let mut s = open_server(Capabilities::NONE);
    let Said::Event(e) = server_feed(&mut s, 2, &msg(0x0A, 4, &[0; 8])) else {
        panic!()
    };
    assert!(e.contains("WrongStream"), "{e}");
    assert_eq!(errors(&server_out(&mut s)), [(4, 6)]);
    // A hello on stream 1 before the handshake: the connection closes.
    let mut s = Server::new(server_config(Capabilities::NONE), 0);
    let mut h = client_hello(1, MAX, &[0]);
    h[4] = 1;
    assert!(matches!(server_feed(&mut s, 1, &h), Said::Fatal(_)));
    // The sessions write hellos and pings on stream 0.
    let mut c = Client::new(client_config(&[0]), 0);
    assert_eq!(client_out(&mut c)[0].1, 0);
}

#[test]
fn np_stream_2_a_stream_in_use_cannot_be_opened_again() {
    let mut s = open_server(Capabilities::NONE);
    let r = msg(3, 7, &request_payload("a", &[], 0, 64, 0));
    assert!(matches!(server_feed(&mut s, 2, &r), Said::Event(e) if e.starts_with("Request")));
    assert_eq!(s.open_streams(), 1);
    let Said::Event(e) = server_feed(&mut s, 3, &r) else {
        panic!()
    };
    assert!(e.contains("StreamInUse"), "{e}");
    // The ERROR closes the stream that was open, too.
    assert_eq!(errors(&server_out(&mut s)), [(7, 6)]);
    assert_eq!(s.open_streams(), 0);
    // The client refuses to reuse an open id itself.
    let mut c = open_client(&[0], 0);
    let mut out = [0u8; 256];
    c.request(2, 7, &req("a", 0, RequestFlags::NONE), &mut out)
        .unwrap();
    assert_eq!(
        c.request(2, 7, &req("a", 0, RequestFlags::NONE), &mut out),
        Err(ApiMisuse::StreamUnavailable(7))
    );
    assert_eq!(
        c.request(2, 0, &req("a", 0, RequestFlags::NONE), &mut out),
        Err(ApiMisuse::StreamUnavailable(0))
    );
}

#[test]
fn np_stream_3_past_the_stream_cap_the_new_stream_gets_busy() {
    let mut s = open_server(Capabilities::NONE);
    for id in 1..=4 {
        let r = msg(3, id, &request_payload("a", &[], 0, 64, 0));
        assert!(matches!(server_feed(&mut s, 2, &r), Said::Event(e) if e.starts_with("Request")));
    }
    let r = msg(3, 5, &request_payload("a", &[], 0, 64, 0));
    assert!(matches!(server_feed(&mut s, 2, &r), Said::Event(e) if e.contains("TooManyStreams")));
    assert_eq!(errors(&server_out(&mut s)), [(5, 0xF2)]);
    assert_eq!(s.open_streams(), 4);
    assert!(s.is_established());
}

// --- hello ----------------------------------------------------------------------------------

#[test]
fn np_hello_1_client_hello_comes_first_and_server_hello_answers_it() {
    let first = [
        msg(3, 1, &request_payload("a", &[], 0, 64, 0)),
        msg(0x0A, 0, &[0; 8]),
        msg(2, 0, &hello_payload(1, MAX, 0, &[], 0, &[0], None)),
    ];
    for m in first {
        let mut s = Server::new(server_config(Capabilities::NONE), 0);
        assert!(
            matches!(server_feed(&mut s, 1, &m), Said::Fatal(e) if e.error_code() == ErrorCode::InvalidMessage)
        );
        assert_eq!(errors(&server_out(&mut s)).len(), 1);
        assert!(s.is_closed());
    }
    // The answer to CLIENT_HELLO is SERVER_HELLO, before anything else.
    let s = open_server(Capabilities::NONE);
    assert!(s.is_established());
    // A second CLIENT_HELLO is out of place.
    let mut s = s;
    assert!(matches!(
        server_feed(&mut s, 2, &client_hello(1, MAX, &[0])),
        Said::Fatal(_)
    ));
    // The client waits for SERVER_HELLO: a descriptor first is fatal.
    let mut c = Client::new(client_config(&[0]), 0);
    client_out(&mut c);
    assert!(matches!(
        client_feed(&mut c, 1, &msg(4, 1, &descriptor_payload(4))),
        Said::Fatal(_)
    ));
}

#[test]
fn np_hello_2_versions() {
    // Version 0 does not exist.
    let mut s = Server::new(server_config(Capabilities::NONE), 0);
    assert!(
        matches!(server_feed(&mut s, 1, &client_hello(0, MAX, &[0])), Said::Fatal(e) if e.error_code() == ErrorCode::ProtocolVersionMismatch)
    );
    assert_eq!(errors(&server_out(&mut s)), [(0, 1)]);
    // A newer client is answered with version 1.
    let mut s = Server::new(server_config(Capabilities::NONE), 0);
    assert!(matches!(
        server_feed(&mut s, 1, &client_hello(7, MAX, &[0])),
        Said::Event(_)
    ));
    let out = server_out(&mut s);
    assert_eq!(&out[0].2[0..4], &1u32.to_le_bytes());
    // A client refuses a server version above its own, or 0.
    for v in [0, 2] {
        let mut c = Client::new(client_config(&[0]), 0);
        client_out(&mut c);
        assert!(
            matches!(client_feed(&mut c, 1, &server_hello_bytes(v, 0)), Said::Fatal(e) if e.error_code() == ErrorCode::ProtocolVersionMismatch)
        );
        assert_eq!(errors(&client_out(&mut c)), [(0, 1)]);
    }
}

#[test]
fn np_hello_3_hello_fields_are_checked() {
    let ok = hello_payload(
        1,
        512,
        0b0111,
        &[0x01, 0xF5, 1, 0, 9, 0x02],
        3,
        &[0x00, 0x01, 0xF3],
        Some(&[0x00, 0x02]),
    );
    let m = msg(1, 0, &ok);
    let Ok(Message::ClientHello(h)) = decode(&m) else {
        panic!()
    };
    assert_eq!(
        (h.max_message_size, h.capabilities.bits(), h.layouts.len()),
        (512, 0b0111, 3)
    );
    assert!(h.accepts_memory_class(2) && !h.accepts_memory_class(1));
    // The memory-class list may be absent: STANDARD only.
    let m = msg(1, 0, &hello_payload(1, 512, 0, &[], 0, &[0], None));
    let Ok(Message::ClientHello(h)) = decode(&m) else {
        panic!()
    };
    assert!(h.accepts_memory_class(0) && !h.accepts_memory_class(2));
    let bad = |max, caps, devices: &[u8], classes: &[u8]| {
        msg(
            1,
            0,
            &hello_payload(1, max, caps, &[], 0, devices, Some(classes)),
        )
    };
    reject(
        &bad(511, 0, &[0], &[0]),
        16,
        NetErrorKind::InvalidValue {
            field: "max_message_size",
            value: 511,
        },
    );
    reject(
        &bad(512, 1 << 4, &[0], &[0]),
        20,
        NetErrorKind::ReservedBits {
            field: "capability_flags",
            value: 16,
        },
    );
    reject(
        &bad(512, 0b1000, &[0], &[0]),
        20,
        NetErrorKind::ReservedBits {
            field: "capability_flags",
            value: 8,
        },
    );
    reject(
        &bad(512, 0, &[0, 0x09], &[0]),
        33,
        NetErrorKind::InvalidValue {
            field: "device_tag",
            value: 9,
        },
    );
    reject(
        &bad(512, 0, &[0xFF], &[0]),
        32,
        NetErrorKind::InvalidValue {
            field: "device_tag",
            value: 0xFF,
        },
    );
    reject(
        &bad(512, 0, &[0], &[0x04]),
        35,
        NetErrorKind::InvalidValue {
            field: "memory_class",
            value: 4,
        },
    );
    // Truncated fixed part, and bytes after the last list.
    reject(
        &msg(1, 0, &[1, 0, 0]),
        12,
        NetErrorKind::Truncated {
            needed: 28,
            available: 15,
        },
    );
    let mut long = hello_payload(1, 512, 0, &[], 0, &[0], Some(&[0]));
    long.push(0);
    reject(
        &msg(1, 0, &long),
        36,
        NetErrorKind::TrailingBytes {
            expected: 36,
            found: 37,
        },
    );
}

#[test]
fn np_hello_4_no_message_larger_than_the_peer_accepts() {
    let mut c = Client::new(client_config(&[0]), 0);
    client_out(&mut c);
    // This server accepts 512-byte payloads.
    let sh = msg(2, 0, &hello_payload(1, 512, 0, &[], 0, &[0], None));
    assert!(matches!(client_feed(&mut c, 1, &sh), Said::Event(_)));
    let key = "k".repeat(600);
    let mut out = vec![0u8; 2048];
    assert!(matches!(
        c.request(2, 1, &req(&key, 0, RequestFlags::NONE), &mut out),
        Err(ApiMisuse::TooLargeForPeer { max: 512, .. })
    ));
    assert_eq!(c.open_streams(), 0);
    // A server's data frames are cut to the client's maximum.
    let mut s = open_server(Capabilities::NONE);
    server_feed(&mut s, 2, &msg(3, 1, &request_payload("a", &[], 0, 64, 0)));
    let desc = owned_descriptor(8000);
    let view = hurray_core::TensorView::parse(&desc).unwrap();
    let dm = DescriptorMessage::unsharded(view).unwrap();
    let mut out = vec![0u8; 9000];
    s.send_descriptor(1, &dm, &mut out).unwrap();
    assert!(matches!(
        s.data_prefix(1, 0, MAX - 7),
        Err(ApiMisuse::TooLargeForPeer { .. })
    ));
    assert!(s.data_prefix(1, 0, MAX - 8).is_ok());
}

// --- layout lists, keys, requests ------------------------------------------------------------

#[test]
fn np_layout_1_extension_entries_are_skipped_plain_tags_must_be_known() {
    let list = LayoutList::parse(4, &[0xF0, 0, 0, 0x03, 0xFE, 3, 0, 1, 2, 3, 0x40]).unwrap();
    let tags: Vec<_> = list.iter().map(|e| (e.tag, e.ext_metadata.len())).collect();
    assert_eq!(tags, [(0xF0, 0), (0x03, 0), (0xFE, 3), (0x40, 0)]);
    // Inside a request, offsets count from the message start (list at 12+4+1+2).
    let bad = request_payload("k", &[0x01, 0x0C], 0, 64, 0);
    let mut b = bad.clone();
    b[5] = 2; // count 2
    reject(
        &msg(3, 1, &b),
        20,
        NetErrorKind::InvalidValue {
            field: "layout_tag",
            value: 0x0C,
        },
    );
    // An extension entry whose metadata runs past the payload.
    let mut r = request_payload("k", &[0xF1, 9, 0], 0, 64, 0);
    r[5] = 1;
    assert!(matches!(
        decode(&msg(3, 1, &r)).unwrap_err().kind(),
        NetErrorKind::Truncated { .. }
    ));
    for t in [0x00, 0x0C, 0x3F, 0x41, 0xEF, 0xFF] {
        assert!(LayoutList::parse(1, &[t]).is_err(), "{t:#x}");
    }
}

#[test]
fn np_key_1_keys_are_one_to_1024_bytes_of_utf8() {
    let ok = "w".repeat(MAX_KEY_LEN);
    assert!(decode(&msg(3, 1, &request_payload(&ok, &[], 0, 64, 0))).is_ok());
    let long = "w".repeat(MAX_KEY_LEN + 1);
    reject(
        &msg(3, 1, &request_payload(&long, &[], 0, 64, 0)),
        12,
        NetErrorKind::InvalidValue {
            field: "tensor_key length",
            value: 1025,
        },
    );
    reject(
        &msg(3, 1, &request_payload("", &[], 0, 64, 0)),
        12,
        NetErrorKind::InvalidValue {
            field: "tensor_key length",
            value: 0,
        },
    );
    let mut p = request_payload("ab", &[], 0, 64, 0);
    p[4] = 0xC3; // a lone lead byte
    reject(
        &msg(3, 1, &p),
        16,
        NetErrorKind::NotUtf8 {
            field: "tensor_key",
        },
    );
    // A key length beyond the payload.
    let mut p = request_payload("ab", &[], 0, 64, 0);
    p[0] = 200;
    assert!(matches!(
        decode(&msg(3, 1, &p)).unwrap_err().kind(),
        NetErrorKind::Truncated { needed: 216, .. }
    ));
}

#[test]
fn np_request_1_request_fields_are_checked() {
    let m = msg(3, 1, &request_payload("x", &[0x02], 0x01, 4096, 3));
    let Ok(Message::TensorRequest(r)) = decode(&m) else {
        panic!()
    };
    assert_eq!(
        (r.key, r.preferred_device, r.min_alignment, r.flags.bits()),
        ("x", 1, 4096, 3)
    );
    // key 12..17, count 17..19, device 19, alignment 20..24, flags 24..28.
    reject(
        &msg(3, 1, &request_payload("x", &[], 0x09, 64, 0)),
        19,
        NetErrorKind::InvalidValue {
            field: "preferred_device",
            value: 9,
        },
    );
    reject(
        &msg(3, 1, &request_payload("x", &[], 0, 48, 0)),
        20,
        NetErrorKind::InvalidValue {
            field: "min_alignment",
            value: 48,
        },
    );
    reject(
        &msg(3, 1, &request_payload("x", &[], 0, 0, 0)),
        20,
        NetErrorKind::InvalidValue {
            field: "min_alignment",
            value: 0,
        },
    );
    reject(
        &msg(3, 1, &request_payload("x", &[], 0, 64, 4)),
        24,
        NetErrorKind::ReservedBits {
            field: "request_flags",
            value: 4,
        },
    );
}

// --- the data plane -------------------------------------------------------------------------------

#[test]
fn np_data_1_total_data_bytes_is_the_sum_of_the_buffers() {
    // A CSR tensor has three buffers: values, column indices, row pointers.
    let d = Desc::new(ty::F32, lay::CSR, &[2, 3])
        .layout(common::compressed(2))
        .buffers(&[cpu(8), cpu(16), cpu(24)]);
    let bytes = d.bytes();
    let mut p = bytes.clone();
    p.extend_from_slice(&transport(48, 0, 1));
    let wire = msg(4, 1, &p);
    let Ok(Message::TensorDescriptor(m)) = decode(&wire) else {
        panic!("{:?}", decode(&wire))
    };
    assert_eq!(m.total_data_bytes, 48);
    let at = 12 + bytes.len() as u32;
    let mut p = bytes.clone();
    p.extend_from_slice(&transport(8, 0, 1));
    reject(
        &msg(4, 1, &p),
        at,
        NetErrorKind::InvalidValue {
            field: "total_data_bytes",
            value: 8,
        },
    );
    // The same rule in a put.
    let put = put_payload("k", &bytes, 47);
    let total_at = 12 + 4 + 1 + 4 + bytes.len() as u32;
    reject(
        &msg(7, 1, &put),
        total_at,
        NetErrorKind::InvalidValue {
            field: "total_data_bytes",
            value: 47,
        },
    );
    // A descriptor shorter than its transport fields, and one with bytes after them.
    let mut p = owned_descriptor(4);
    p.extend_from_slice(&[0; 15]);
    assert!(matches!(
        decode(&msg(4, 1, &p)).unwrap_err().kind(),
        NetErrorKind::Truncated { .. }
    ));
    let mut p = descriptor_payload(4);
    p.push(0);
    assert!(matches!(
        decode(&msg(4, 1, &p)).unwrap_err().kind(),
        NetErrorKind::TrailingBytes { .. }
    ));
    // A broken descriptor is reported at the message offset where it starts.
    let mut p = descriptor_payload(4);
    p[0] = b'X';
    let e = decode(&msg(4, 1, &p)).unwrap_err();
    assert_eq!(e.offset(), 12);
    assert!(matches!(e.kind(), NetErrorKind::Descriptor(d) if d.offset() == 0));
}

/// A client with one open request (stream 1) whose 10-byte answer began.
fn receiving_client() -> Client {
    let mut c = open_client(&[0], 0);
    let mut out = [0u8; 256];
    c.request(2, 1, &req("a", 0, RequestFlags::NONE), &mut out)
        .unwrap();
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 1, &descriptor_payload(10))), Said::Event(e) if e.starts_with("Descriptor"))
    );
    c
}

#[test]
fn np_data_2_frames_follow_each_other_in_the_buffer_concatenation() {
    let mut c = receiving_client();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(5, 1, &data(0, &[1; 4]))), Said::Event(e) if e.starts_with("Data"))
    );
    // A gap (offset 5 where 4 is next): INVALID_MESSAGE on the stream.
    let Said::Event(e) = client_feed(&mut c, 5, &msg(5, 1, &data(5, &[1; 2]))) else {
        panic!()
    };
    assert!(
        e.contains("DataOutOfOrder { expected: 4, found: 5 }"),
        "{e}"
    );
    assert_eq!(errors(&client_out(&mut c)), [(1, 6)]);
    assert!(!c.is_open(1));
    // An overlap on a fresh request.
    let mut c = receiving_client();
    client_feed(&mut c, 4, &msg(5, 1, &data(0, &[1; 4])));
    let Said::Event(e) = client_feed(&mut c, 5, &msg(5, 1, &data(2, &[1; 2]))) else {
        panic!()
    };
    assert!(
        e.contains("DataOutOfOrder { expected: 4, found: 2 }"),
        "{e}"
    );
    // Across buffers: the CSR frames run through values, indices, pointers.
    let mut s = open_server(Capabilities::NONE);
    server_feed(&mut s, 2, &msg(3, 1, &request_payload("a", &[], 0, 64, 0)));
    let bytes = Desc::new(ty::F32, lay::CSR, &[2, 3])
        .layout(common::compressed(2))
        .buffers(&[cpu(8), cpu(16), cpu(24)])
        .bytes();
    let view = hurray_core::TensorView::parse(&bytes).unwrap();
    let mut out = vec![0u8; 1024];
    s.send_descriptor(1, &DescriptorMessage::unsharded(view).unwrap(), &mut out)
        .unwrap();
    s.send_data(1, 0, &[0; 20], &mut out).unwrap(); // values and part of the indices
    assert_eq!(
        s.send_data(1, 21, &[0; 27], &mut out),
        Err(ApiMisuse::OutOfOrder(1))
    );
    s.send_data(1, 20, &[0; 28], &mut out).unwrap();
    s.send_data_end(1, &mut out).unwrap();
    assert_eq!(s.open_streams(), 0);
}

#[test]
fn np_data_3_no_empty_frame_no_overrun_end_only_when_complete() {
    let mut c = receiving_client();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(5, 1, &data(0, &[]))), Said::Event(e) if e.contains("DataOverrun"))
    );
    let mut c = receiving_client();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(5, 1, &data(0, &[0; 11]))), Said::Event(e) if e.contains("DataOverrun { total: 10, end: 11 }"))
    );
    let mut c = receiving_client();
    client_feed(&mut c, 4, &msg(5, 1, &data(0, &[0; 9])));
    assert!(
        matches!(client_feed(&mut c, 4, &msg(6, 1, &[])), Said::Event(e) if e.contains("DataShort { total: 10, received: 9 }"))
    );
    assert_eq!(errors(&client_out(&mut c)), [(1, 6)]);
    // Complete: the request ends with its last byte's END.
    let mut c = receiving_client();
    client_feed(&mut c, 4, &msg(5, 1, &data(0, &[0; 10])));
    assert!(
        matches!(client_feed(&mut c, 4, &msg(6, 1, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    assert!(!c.is_open(1));
    // A zero-byte tensor: DESCRIPTOR, then END, no frame.
    let mut c = open_client(&[0], 0);
    let mut out = [0u8; 256];
    c.request(2, 1, &req("a", 0, RequestFlags::NONE), &mut out)
        .unwrap();
    let d = Desc::new(ty::U8, lay::ROW, &[0])
        .buffers(&[entry(0, 1, 0, 0, 0, 0)])
        .bytes();
    let mut p = d;
    p.extend_from_slice(&transport(0, 0, 1));
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 1, &p)), Said::Event(e) if e.starts_with("Descriptor"))
    );
    assert!(
        matches!(client_feed(&mut c, 4, &msg(6, 1, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    // An END with a payload is malformed.
    reject(
        &msg(6, 1, &[0]),
        12,
        NetErrorKind::TrailingBytes {
            expected: 12,
            found: 13,
        },
    );
}

#[test]
fn np_data_4_no_data_before_its_descriptor() {
    let mut c = open_client(&[0], 0);
    let mut out = [0u8; 256];
    c.request(2, 1, &req("a", 0, RequestFlags::NONE), &mut out)
        .unwrap();
    let Said::Event(e) = client_feed(&mut c, 3, &msg(5, 1, &data(0, &[1]))) else {
        panic!()
    };
    assert!(e.contains("Unexpected"), "{e}");
    assert_eq!(errors(&client_out(&mut c)), [(1, 6)]);
    // Data on a stream nobody opened.
    let mut c = open_client(&[0], 0);
    assert!(
        matches!(client_feed(&mut c, 3, &msg(5, 3, &data(0, &[1]))), Said::Event(e) if e.contains("UnknownStream"))
    );
    // The server application cannot send data before a descriptor either.
    let mut s = open_server(Capabilities::NONE);
    server_feed(&mut s, 2, &msg(3, 1, &request_payload("a", &[], 0, 64, 0)));
    assert_eq!(
        s.send_data(1, 0, &[1], &mut out),
        Err(ApiMisuse::OutOfOrder(1))
    );
}

#[test]
fn np_sync_1_buffers_on_the_wire_are_producer_synced() {
    // A CUDA buffer with sync mode EVENT (0x01) is fine in a descriptor, not on the wire.
    let d = Desc::new(ty::U8, lay::ROW, &[64])
        .buffers(&[entry(64, 64, 0x01, 0x01, 0, 0)])
        .bytes();
    assert!(hurray_core::TensorView::parse(&d).is_ok());
    let mut p = d.clone();
    p.extend_from_slice(&transport(64, 0, 1));
    reject(
        &msg(4, 1, &p),
        12,
        NetErrorKind::InvalidValue {
            field: "sync_mode",
            value: 1,
        },
    );
    let ok = Desc::new(ty::U8, lay::ROW, &[64])
        .buffers(&[entry(64, 64, 0x01, 0x00, 0, 0)])
        .bytes();
    let mut p = ok;
    p.extend_from_slice(&transport(64, 0, 1));
    assert!(decode(&msg(4, 1, &p)).is_ok());
    reject(
        &msg(7, 1, &put_payload("k", &d, 64)),
        12 + 4 + 1 + 4,
        NetErrorKind::InvalidValue {
            field: "sync_mode",
            value: 1,
        },
    );
}

#[test]
fn np_composite_1_a_head_binds_the_next_members_on_its_stream() {
    let mut c = open_client(&[0], 0);
    let mut out = [0u8; 256];
    c.request(2, 1, &req("a", 0, RequestFlags::NONE), &mut out)
        .unwrap();
    // Head with 2 members (partition rule), no buffers, total 0.
    let mut head = Desc::new(ty::F32, lay::COMPOSITE, &[8, 8])
        .layout(common::composite(1, 0, 2))
        .bytes();
    head.extend_from_slice(&transport(0, 0, 1));
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 1, &head)), Said::Event(e) if e.starts_with("Descriptor"))
    );
    assert!(
        matches!(client_feed(&mut c, 3, &msg(6, 1, &[])), Said::Event(e) if e.contains("request_complete: false"))
    );
    for i in 0..2 {
        client_feed(&mut c, 4, &msg(4, 1, &descriptor_payload(3)));
        client_feed(&mut c, 4, &msg(5, 1, &data(0, &[i; 3])));
        let Said::Event(e) = client_feed(&mut c, 4, &msg(6, 1, &[])) else {
            panic!()
        };
        assert_eq!(e.contains("request_complete: true"), i == 1, "{e}");
    }
    assert!(!c.is_open(1));
    // A third member is one too many: the stream is closed, it is unknown now
    // (and recently closed, so it is dropped quietly).
    assert!(
        matches!(client_feed(&mut c, 4, &msg(4, 1, &descriptor_payload(3))), Said::Event(e) if e == "Ignored")
    );
    // A composite head cannot be put.
    let h = Desc::new(ty::F32, lay::COMPOSITE, &[8, 8])
        .layout(common::composite(1, 0, 2))
        .bytes();
    reject(
        &msg(7, 1, &put_payload("k", &h, 0)),
        21,
        NetErrorKind::InvalidValue {
            field: "layout_tag",
            value: 0x0B,
        },
    );
}

#[test]
fn np_put_1_put_then_data_then_end_then_ack() {
    let mut s = open_server(Capabilities::NONE);
    let d = owned_descriptor(6);
    let Said::Event(e) = server_feed(&mut s, 2, &msg(7, 3, &put_payload("t/x", &d, 6))) else {
        panic!()
    };
    assert!(e.starts_with("PutStart"), "{e}");
    let mut out = [0u8; 64];
    // No acknowledgement before the data ended.
    assert_eq!(s.send_put_ack(3, &mut out), Err(ApiMisuse::WrongState(3)));
    assert!(
        matches!(server_feed(&mut s, 3, &msg(5, 3, &data(0, &[1, 2, 3]))), Said::Event(e) if e.starts_with("PutData"))
    );
    assert!(
        matches!(server_feed(&mut s, 3, &msg(5, 3, &data(3, &[4, 5, 6]))), Said::Event(e) if e.starts_with("PutData"))
    );
    assert!(
        matches!(server_feed(&mut s, 3, &msg(6, 3, &[])), Said::Event(e) if e.starts_with("PutEnd"))
    );
    let n = s.send_put_ack(3, &mut out).unwrap();
    assert_eq!(split(&out[..n]), (8, 3, vec![]));
    assert_eq!(s.open_streams(), 0);
    // Data after the end is out of place.
    let mut s = open_server(Capabilities::NONE);
    server_feed(&mut s, 2, &msg(7, 3, &put_payload("t/x", &d, 6)));
    server_feed(&mut s, 3, &msg(5, 3, &data(0, &[0; 6])));
    server_feed(&mut s, 3, &msg(6, 3, &[]));
    assert!(
        matches!(server_feed(&mut s, 3, &msg(5, 3, &data(6, &[0]))), Said::Event(e) if e.contains("Unexpected"))
    );
    // The client: put, data, end, then the ack closes the stream.
    let mut c = open_client(&[0], 0);
    let view = hurray_core::TensorView::parse(&d).unwrap();
    let mut out = [0u8; 256];
    c.put(
        1,
        &TensorPut {
            key: "t/x",
            descriptor: view,
            total_data_bytes: 6,
        },
        &mut out,
    )
    .unwrap();
    assert_eq!(
        c.send_data_end(2, 1, &mut out),
        Err(ApiMisuse::OutOfOrder(1))
    );
    c.send_data(1, 0, &[0; 6], &mut out).unwrap();
    c.send_data_end(2, 1, &mut out).unwrap();
    assert!(
        matches!(client_feed(&mut c, 3, &msg(8, 1, &[])), Said::Event(e) if e.starts_with("PutAck"))
    );
    assert!(!c.is_open(1));
    // A put still open when the server closes the connection sends nothing
    // more, as the server's own sending does (`NotEstablished`).
    let put = TensorPut {
        key: "t/x",
        descriptor: view,
        total_data_bytes: 6,
    };
    c.put(3, &put, &mut out).unwrap();
    c.send_data(3, 0, &[0; 6], &mut out).unwrap();
    assert!(matches!(
        client_feed(&mut c, 4, &msg(9, 0, &error_payload(0xF2, "bye"))),
        Said::Fatal(_)
    ));
    assert_eq!(c.data_prefix(3, 6, 1), Err(ApiMisuse::NotEstablished));
    assert_eq!(
        c.send_data_end(5, 3, &mut out),
        Err(ApiMisuse::NotEstablished)
    );
}

/// A shard payload: u8 [2, 4] rows `row..row+2` of a [4, 4] parent.
fn shard_payload(row: u64, index: u32, shards: u32) -> Vec<u8> {
    let mut p = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[row, 0])
        .bytes();
    p.extend_from_slice(&transport(8, index, shards));
    p
}

#[test]
fn np_shard_1_shard_fields_are_coherent() {
    assert!(decode(&msg(4, 1, &shard_payload(0, 1, 2))).is_ok());
    let d = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[0, 0])
        .bytes();
    let at = 12 + d.len() as u32;
    reject(
        &msg(4, 1, &shard_payload(0, 0, 0)),
        at + 12,
        NetErrorKind::InvalidValue {
            field: "total_shards",
            value: 0,
        },
    );
    reject(
        &msg(4, 1, &shard_payload(0, 0, 257)),
        at + 12,
        NetErrorKind::InvalidValue {
            field: "total_shards",
            value: 257,
        },
    );
    reject(
        &msg(4, 1, &shard_payload(0, 2, 2)),
        at + 8,
        NetErrorKind::InvalidValue {
            field: "shard_index",
            value: 2,
        },
    );
    // Several shards need shard descriptors.
    let mut p = owned_descriptor(8);
    let at = 12 + p.len() as u32;
    p.extend_from_slice(&transport(8, 0, 2));
    reject(
        &msg(4, 1, &p),
        at + 12,
        NetErrorKind::InvalidValue {
            field: "total_shards",
            value: 2,
        },
    );
}

#[test]
fn np_shard_2_shards_ride_the_request_block() {
    let mut c = open_client(&[0], 0b10);
    let mut out = [0u8; 256];
    let par = RequestFlags::PARALLEL_OK;
    // A parallel request's id is a multiple of 256.
    assert_eq!(
        c.request(2, 257, &req("a", 0, par), &mut out),
        Err(ApiMisuse::StreamUnavailable(257))
    );
    c.request(2, 256, &req("a", 0, par), &mut out).unwrap();
    // Its block is reserved.
    assert_eq!(
        c.request(2, 300, &req("b", 0, RequestFlags::NONE), &mut out),
        Err(ApiMisuse::StreamUnavailable(300))
    );
    // Shard 1 on 257, shard 0 on 256, in any order.
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 257, &shard_payload(2, 1, 2))), Said::Event(e) if e.contains("request_id: 256"))
    );
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 256, &shard_payload(0, 0, 2))), Said::Event(e) if e.contains("stream_id: 256"))
    );
    for s in [256, 257] {
        client_feed(&mut c, 4, &msg(5, s, &data(0, &[7; 8])));
    }
    assert!(
        matches!(client_feed(&mut c, 5, &msg(6, 257, &[])), Said::Event(e) if e.contains("request_complete: false"))
    );
    assert!(
        matches!(client_feed(&mut c, 5, &msg(6, 256, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    assert_eq!(c.open_streams(), 0);
    // The server: shards only for a parallel request it can serve so.
    let mut s = open_server(Capabilities::PARALLEL_STREAMS);
    server_feed(
        &mut s,
        2,
        &msg(3, 512, &request_payload("a", &[], 0, 64, 2)),
    );
    server_feed(&mut s, 2, &msg(3, 5, &request_payload("a", &[], 0, 64, 2)));
    let d0 = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[0, 0])
        .bytes();
    let d1 = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[2, 0])
        .bytes();
    let (v0, v1) = (
        hurray_core::TensorView::parse(&d0).unwrap(),
        hurray_core::TensorView::parse(&d1).unwrap(),
    );
    let m0 = DescriptorMessage {
        descriptor: v0,
        total_data_bytes: 8,
        shard_index: 0,
        total_shards: 2,
    };
    let m1 = DescriptorMessage {
        descriptor: v1,
        total_data_bytes: 8,
        shard_index: 1,
        total_shards: 2,
    };
    let mut out = vec![0u8; 512];
    // Stream 5 is not a block start: no shards.
    assert_eq!(
        s.send_descriptor(5, &m1, &mut out),
        Err(ApiMisuse::InvalidArgument("total_shards"))
    );
    let n = s.send_descriptor(512, &m1, &mut out).unwrap();
    assert_eq!(split(&out[..n]).1, 513);
    assert_eq!(ServerSession::<4>::shard_stream(512, 1), 513);
    s.send_descriptor(512, &m0, &mut out).unwrap();
    // A client request inside the open block is refused.
    assert!(
        matches!(server_feed(&mut s, 3, &msg(3, 600, &request_payload("a", &[], 0, 64, 0))), Said::Event(e) if e.contains("StreamInUse"))
    );
    // Without PARALLEL_STREAMS the server never shards.
    let mut s = open_server(Capabilities::NONE);
    server_feed(
        &mut s,
        2,
        &msg(3, 512, &request_payload("a", &[], 0, 64, 2)),
    );
    assert_eq!(
        s.send_descriptor(512, &m1, &mut out),
        Err(ApiMisuse::InvalidArgument("total_shards"))
    );
}

#[test]
fn np_shard_3_inconsistent_shards_are_refused_with_shard_mismatch() {
    let mut c = open_client(&[0], 0b10);
    let mut out = [0u8; 256];
    c.request(2, 256, &req("a", 0, RequestFlags::PARALLEL_OK), &mut out)
        .unwrap();
    // Shard index 3 on stream 257 (which implies index 1).
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 257, &shard_payload(2, 3, 4))), Said::Event(e) if e.contains("ShardMismatch"))
    );
    // The ERROR goes on the request's stream and ends the whole request.
    assert_eq!(errors(&client_out(&mut c)), [(256, 8)]);
    assert_eq!(c.open_streams(), 0);
    // total_shards that changes between shards.
    c.request(2, 512, &req("a", 0, RequestFlags::PARALLEL_OK), &mut out)
        .unwrap();
    client_feed(&mut c, 3, &msg(4, 512, &shard_payload(0, 0, 2)));
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 513, &shard_payload(2, 1, 3))), Said::Event(e) if e.contains("ShardMismatch"))
    );
    // Geometry: check_shards over what arrived.
    let a = shard_payload(0, 0, 2);
    let b = shard_payload(0, 1, 2); // same rows: overlap
    let g = shard_payload(2, 1, 2);
    let (ma, mb, mg) = (dm(&a), dm(&b), dm(&g));
    assert_eq!(check_shards(&[ma, mg]), Ok(()));
    assert_eq!(
        check_shards(&[ma, mb]),
        Err(ShardError::Overlap { a: 0, b: 1 })
    );
    assert_eq!(
        check_shards(&[ma]),
        Err(ShardError::Count {
            expected: 2,
            found: 1
        })
    );
    // A parent the shards do not cover.
    let mut short = Desc::dense(ty::U8, &[1, 4], 4)
        .shard(&[4, 4], &[2, 0])
        .bytes();
    short.extend_from_slice(&transport(4, 1, 2));
    assert_eq!(
        check_shards(&[ma, dm(&short)]),
        Err(ShardError::Coverage {
            covered: 12,
            parent: 16
        })
    );
    let mut other = Desc::dense(ty::I8, &[2, 4], 8)
        .shard(&[4, 4], &[2, 0])
        .bytes();
    other.extend_from_slice(&transport(8, 1, 2));
    assert_eq!(
        check_shards(&[ma, dm(&other)]),
        Err(ShardError::Inconsistent {
            index: 1,
            what: "element type"
        })
    );
}

fn dm(p: &[u8]) -> DescriptorMessage<'_> {
    match Message::decode_payload(MessageType::TensorDescriptor, p).unwrap() {
        Message::TensorDescriptor(d) => d,
        _ => unreachable!(),
    }
}

// --- devices ------------------------------------------------------------------------------------

fn cuda_payload(n: u64, device: u8) -> Vec<u8> {
    let mut p = Desc::new(ty::U8, lay::ROW, &[n])
        .buffers(&[entry(n, 64, device, 0, 0, 0)])
        .bytes();
    p.extend_from_slice(&transport(n, 0, 1));
    p
}

#[test]
fn np_device_1_the_server_never_falls_back_silently() {
    let mut s = open_server(Capabilities::NONE); // the client listed CPU only
    server_feed(
        &mut s,
        2,
        &msg(3, 1, &request_payload("a", &[], 0x01, 64, 0)),
    );
    server_feed(
        &mut s,
        2,
        &msg(3, 2, &request_payload("a", &[], 0x02, 64, 0)),
    );
    let cuda = cuda_payload(64, 0x01);
    let cpu_p = cuda_payload(64, 0x00);
    let rocm = cuda_payload(64, 0x02);
    let mut out = vec![0u8; 512];
    // ROCm requested (not advertised by this server): neither CPU nor CUDA may stand in.
    assert_eq!(
        s.send_descriptor(2, &dm(&cpu_p), &mut out),
        Err(ApiMisuse::InvalidArgument("device_tag"))
    );
    assert_eq!(
        s.send_descriptor(2, &dm(&cuda), &mut out),
        Err(ApiMisuse::InvalidArgument("device_tag"))
    );
    assert!(s.send_descriptor(2, &dm(&rocm), &mut out).is_ok());
    // CUDA requested and advertised, the client listed CPU: CPU is the one fallback.
    assert!(s.send_descriptor(1, &dm(&cpu_p), &mut out).is_ok());
    // The application answers DEVICE_UNAVAILABLE itself.
    let n = s
        .send_error(2, ErrorCode::DeviceUnavailable, "no ROCm here", &mut out)
        .unwrap();
    assert_eq!(split(&out[..n]).2[0..4], 5u32.to_le_bytes());
}

#[test]
fn np_device_2_the_client_refuses_a_device_it_did_not_list() {
    let mut c = open_client(&[0x00], 0);
    let mut out = [0u8; 256];
    c.request(2, 1, &req("a", 0x01, RequestFlags::NONE), &mut out)
        .unwrap();
    c.request(2, 2, &req("a", 0x01, RequestFlags::NONE), &mut out)
        .unwrap();
    c.request(2, 3, &req("a", 0x01, RequestFlags::NONE), &mut out)
        .unwrap();
    // The preferred device, or CPU (listed), are accepted; ROCm is not.
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 1, &cuda_payload(64, 0x01))), Said::Event(e) if e.starts_with("Descriptor"))
    );
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 2, &cuda_payload(64, 0x00))), Said::Event(e) if e.starts_with("Descriptor"))
    );
    assert!(
        matches!(client_feed(&mut c, 3, &msg(4, 3, &cuda_payload(64, 0x02))), Said::Event(e) if e.contains("DeviceRefused"))
    );
    assert_eq!(errors(&client_out(&mut c)), [(3, 5)]);
}

// --- errors, pings, RDMA, timers -------------------------------------------------------------------

#[test]
fn np_error_1_an_error_closes_the_stream_on_both_sides() {
    let mut s = open_server(Capabilities::NONE);
    server_feed(
        &mut s,
        2,
        &msg(7, 3, &put_payload("k", &owned_descriptor(6), 6)),
    );
    assert!(
        matches!(server_feed(&mut s, 2, &msg(9, 3, &error_payload(0xF3, "gave up"))), Said::Event(e) if e.starts_with("PeerError"))
    );
    assert_eq!(s.open_streams(), 0);
    // Frames still in flight on it are dropped quietly.
    assert!(
        matches!(server_feed(&mut s, 3, &msg(5, 3, &data(0, &[1]))), Said::Event(e) if e == "Ignored")
    );
    assert!(server_out(&mut s).is_empty());
    // A server ERROR on a request closes it at the client.
    let mut c = receiving_client();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(9, 1, &error_payload(2, "no such tensor"))), Said::Event(e) if e.contains("UnknownTensor"))
    );
    assert!(!c.is_open(1));
    // ERROR on stream 0 closes the connection.
    let mut c = open_client(&[0], 0);
    assert!(
        matches!(client_feed(&mut c, 4, &msg(9, 0, &error_payload(0xF2, "bye"))), Said::Fatal(e) if e.kind == SessionErrorKind::PeerError { code: ErrorCode::Busy })
    );
    assert!(c.is_closed());
}

#[test]
fn np_error_2_error_texts_are_bounded_and_codes_open() {
    let m = msg(9, 1, &error_payload(0x1234, "é"));
    let Ok(Message::Error(e)) = decode(&m) else {
        panic!()
    };
    assert_eq!((e.code, e.text), (ErrorCode::Other(0x1234), "é"));
    reject(
        &msg(9, 1, &[6, 0, 0, 0, 1, 0, 0, 0, 0xFF]),
        20,
        NetErrorKind::NotUtf8 { field: "message" },
    );
    // We send at most 256 bytes of text, cut at a character boundary.
    let long = "é".repeat(200);
    let mut out = [0u8; 600];
    let n = Message::Error(ErrorMessage {
        code: ErrorCode::Internal,
        text: &long,
    })
    .encode(1, &mut out)
    .unwrap();
    let Ok(Message::Error(e)) = decode(&out[..n]) else {
        panic!()
    };
    assert_eq!(e.text.len(), 256);
    assert!(long.starts_with(e.text));
}

#[test]
fn np_error_3_an_error_is_never_answered_with_an_error() {
    let mut s = open_server(Capabilities::NONE);
    // An ERROR on a stream that is not open: no answer.
    assert!(
        matches!(server_feed(&mut s, 2, &msg(9, 44, &error_payload(6, "x"))), Said::Event(e) if e.starts_with("PeerError"))
    );
    assert!(server_out(&mut s).is_empty());
    // An ERROR on stream 0 ends the connection without a reply.
    assert!(matches!(
        server_feed(&mut s, 2, &msg(9, 0, &error_payload(6, "x"))),
        Said::Fatal(_)
    ));
    assert!(server_out(&mut s).is_empty());
    assert!(s.is_closed());
}

#[test]
fn np_ping_1_ping_carries_eight_bytes_pong_echoes_them() {
    reject(
        &msg(0x0A, 0, &[0; 7]),
        8,
        NetErrorKind::InvalidValue {
            field: "payload_length",
            value: 7,
        },
    );
    reject(
        &msg(0x0B, 0, &[0; 9]),
        8,
        NetErrorKind::InvalidValue {
            field: "payload_length",
            value: 9,
        },
    );
    let mut s = open_server(Capabilities::NONE);
    assert!(
        matches!(server_feed(&mut s, 2, &msg(0x0A, 0, &0xABCDu64.to_le_bytes())), Said::Event(e) if e.starts_with("Ping"))
    );
    assert_eq!(
        server_out(&mut s),
        [(0x0B, 0, 0xABCDu64.to_le_bytes().to_vec())]
    );
    // Our ping, answered with the wrong token: the connection closes.
    let mut out = [0u8; 32];
    s.send_ping(3, 77, &mut out).unwrap();
    assert!(
        matches!(server_feed(&mut s, 4, &msg(0x0B, 0, &78u64.to_le_bytes())), Said::Fatal(e) if e.kind == SessionErrorKind::UnsolicitedPong)
    );
    // The right token is accepted.
    let mut c = open_client(&[0], 0);
    c.send_ping(3, 5, &mut out).unwrap();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(0x0B, 0, &5u64.to_le_bytes())), Said::Event(e) if e.starts_with("Pong"))
    );
}

#[test]
fn np_rdma_1_rdma_is_never_negotiated() {
    let mut reg = 0u64.to_le_bytes().to_vec();
    reg.extend_from_slice(&64u64.to_le_bytes());
    reg.extend_from_slice(&4u32.to_le_bytes());
    reg.extend_from_slice(&[1, 2, 3, 4]);
    assert!(
        matches!(decode(&msg(0x0C, 1, &reg)), Ok(Message::RdmaRegister(r)) if r.rkey == [1, 2, 3, 4])
    );
    let mut s = open_server(Capabilities::NONE);
    server_feed(&mut s, 2, &msg(3, 1, &request_payload("a", &[], 0, 64, 0)));
    assert!(
        matches!(server_feed(&mut s, 2, &msg(0x0D, 1, &[])), Said::Event(e) if e.contains("Unexpected"))
    );
    assert_eq!(errors(&server_out(&mut s)), [(1, 6)]);
    let mut c = receiving_client();
    assert!(
        matches!(client_feed(&mut c, 4, &msg(0x0C, 1, &reg)), Said::Event(e) if e.contains("Unexpected"))
    );
}

#[test]
fn np_time_1_silent_peers_and_stalled_streams_time_out() {
    // No hello within the handshake time.
    let mut s = Server::new(server_config(Capabilities::NONE), 100);
    assert_eq!(s.poll_timeout(), Some(1_100));
    assert_eq!(s.handle_timeout(1_099), Ok(None));
    // One byte at a time does not count as a message.
    let hello = client_hello(1, MAX, &[0]);
    assert!(
        matches!(server_feed(&mut s, 1_050, &hello[..1]), Said::Event(e) if e == "Partial(12)")
    );
    assert!(matches!(s.handle_timeout(1_100), Err(e) if e.kind == SessionErrorKind::Timeout));
    assert_eq!(errors(&server_out(&mut s)), [(0, 0xF0)]);
    // Idle after the handshake.
    let mut s = open_server(Capabilities::NONE);
    assert_eq!(s.poll_timeout(), Some(10_001));
    assert!(s.handle_timeout(10_001).is_err());
    // A put that stalls: its stream is closed with TIMEOUT, the connection lives.
    let mut s = open_server(Capabilities::NONE);
    server_feed(
        &mut s,
        2,
        &msg(7, 3, &put_payload("k", &owned_descriptor(6), 6)),
    );
    server_feed(&mut s, 1_000, &msg(5, 3, &data(0, &[1])));
    server_feed(&mut s, 5_000, &msg(0x0A, 0, &[0; 8]));
    server_out(&mut s);
    assert_eq!(s.poll_timeout(), Some(6_000));
    assert_eq!(s.handle_timeout(6_000), Ok(Some(3)));
    assert_eq!(errors(&server_out(&mut s)), [(3, 0xF0)]);
    assert!(s.is_established());
    // A client waiting on a silent server.
    let mut c = receiving_client();
    assert_eq!(c.handle_timeout(3 + 5_000), Ok(Some(1)));
    assert_eq!(errors(&client_out(&mut c)), [(1, 0xF0)]);
}

/// A hand-built shard-selection layout entry (tag 0xF5, 8 metadata bytes).
fn select_entry(index: u16, count: u16) -> Vec<u8> {
    let mut v = vec![0xF5, 8, 0, b'H', b'R', b'S', b'1'];
    v.extend_from_slice(&index.to_le_bytes());
    v.extend_from_slice(&count.to_le_bytes());
    v
}

/// Row-major, then "selections of up to 4 shards honoured".
static ADVERTISED: [u8; 12] = [0x01, 0xF5, 8, 0, b'H', b'R', b'S', b'1', 0, 0, 4, 0];

#[test]
fn np_shard_4_a_selection_asks_for_one_shard_of_exactly_count() {
    // The entry decodes as ours only with our magic and values in range.
    let e = select_entry(2, 4);
    let sel = ShardSelect::new(2, 4).unwrap();
    assert_eq!(sel.entry().as_slice(), e.as_slice());
    assert_eq!(
        ShardSelect::find(&LayoutList::parse(1, &e).unwrap()),
        Some(sel)
    );
    let mut other = e.clone();
    other[3] = b'X'; // someone else's 0xF5 entry: stepped over
    assert_eq!(
        ShardSelect::find(&LayoutList::parse(1, &other).unwrap()),
        None
    );
    for (i, c) in [(4u16, 4u16), (0, 0), (0, 257)] {
        let bad = select_entry(i, c);
        assert_eq!(
            ShardSelect::find(&LayoutList::parse(1, &bad).unwrap()),
            None
        );
    }

    // Client, against a server that advertises PARALLEL_STREAMS and the entry.
    let mut c = Client::new(client_config(&[0]), 0);
    client_out(&mut c);
    let hello = msg(
        2,
        0,
        &hello_payload(1, MAX, 0b10, &ADVERTISED, 2, &[0x00], Some(&[0])),
    );
    assert!(matches!(client_feed(&mut c, 1, &hello), Said::Event(e) if e.starts_with("Connected")));
    assert_eq!(c.peer_select_max(), Some(4));
    let list = &select_entry(2, 4)[..];
    fn selected(list: &[u8]) -> TensorRequest<'_> {
        TensorRequest {
            preferred_layouts: LayoutList::parse(1, list).unwrap(),
            ..req("a", 0, RequestFlags::PARALLEL_OK)
        }
    }
    let mut out = [0u8; 256];
    c.request(2, 256, &selected(list), &mut out).unwrap();
    // Shard 2 of 4 on 258 is the whole answer.
    client_feed(&mut c, 3, &msg(4, 258, &shard_payload(0, 2, 4)));
    client_feed(&mut c, 3, &msg(5, 258, &data(0, &[1; 8])));
    assert!(
        matches!(client_feed(&mut c, 4, &msg(6, 258, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    assert_eq!(c.open_streams(), 0);
    // Another shard, or another count, is SHARD_MISMATCH on the request.
    c.request(5, 512, &selected(list), &mut out).unwrap();
    assert!(
        matches!(client_feed(&mut c, 6, &msg(4, 513, &shard_payload(0, 1, 4))), Said::Event(e) if e.contains("ShardMismatch"))
    );
    assert_eq!(errors(&client_out(&mut c)), [(512, 8)]);
    c.request(7, 768, &selected(list), &mut out).unwrap();
    assert!(
        matches!(client_feed(&mut c, 8, &msg(4, 770, &shard_payload(0, 2, 2 + 1))), Said::Event(e) if e.contains("ShardMismatch"))
    );
    client_out(&mut c);
    // Shard 2 never travels on the request's own stream.
    c.request(9, 1024, &selected(list), &mut out).unwrap();
    assert!(
        matches!(client_feed(&mut c, 10, &msg(4, 1024, &descriptor_payload(8))), Said::Event(e) if e.contains("ShardMismatch"))
    );
    client_out(&mut c);
    // Selection 0: the whole tensor in one shard is an answer too.
    let zero = &select_entry(0, 4)[..];
    c.request(11, 1280, &selected(zero), &mut out).unwrap();
    client_feed(&mut c, 12, &msg(4, 1280, &descriptor_payload(8)));
    client_feed(&mut c, 12, &msg(5, 1280, &data(0, &[1; 8])));
    assert!(
        matches!(client_feed(&mut c, 13, &msg(6, 1280, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    // A count above the advertised one is not in force: every shard comes.
    let big = &select_entry(1, 8)[..];
    c.request(14, 1536, &selected(big), &mut out).unwrap();
    client_feed(&mut c, 15, &msg(4, 1536, &shard_payload(0, 0, 2)));
    client_feed(&mut c, 15, &msg(4, 1537, &shard_payload(2, 1, 2)));
    for s in [1536, 1537] {
        client_feed(&mut c, 16, &msg(5, s, &data(0, &[7; 8])));
    }
    assert!(
        matches!(client_feed(&mut c, 17, &msg(6, 1537, &[])), Said::Event(e) if e.contains("request_complete: false"))
    );
    assert!(
        matches!(client_feed(&mut c, 17, &msg(6, 1536, &[])), Said::Event(e) if e.contains("request_complete: true"))
    );
    assert_eq!(c.open_streams(), 0);

    // Server: the selection is in force only where it advertised it.
    let mut config = server_config(Capabilities::PARALLEL_STREAMS);
    config.hello.layouts = LayoutList::parse(2, &ADVERTISED).unwrap();
    let mut s = Server::new(config, 0);
    server_feed(&mut s, 1, &client_hello(1, MAX, &[0x00]));
    server_out(&mut s);
    let mut p = request_payload("a", &select_entry(1, 2), 0, 64, 2);
    p[5..7].copy_from_slice(&1u16.to_le_bytes()); // one layout entry
    server_feed(&mut s, 2, &msg(3, 256, &p));
    assert!(s.may_shard(256));
    assert_eq!(s.shard_select(256), ShardSelect::new(1, 2));
    let d0 = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[0, 0])
        .bytes();
    let d1 = Desc::dense(ty::U8, &[2, 4], 8)
        .shard(&[4, 4], &[2, 0])
        .bytes();
    let m = |d, i| DescriptorMessage {
        descriptor: hurray_core::TensorView::parse(d).unwrap(),
        total_data_bytes: 8,
        shard_index: i,
        total_shards: 2,
    };
    let mut out = vec![0u8; 512];
    assert_eq!(
        s.send_descriptor(256, &m(&d0, 0), &mut out),
        Err(ApiMisuse::InvalidArgument("shard_index"))
    );
    let n = s.send_descriptor(256, &m(&d1, 1), &mut out).unwrap();
    assert_eq!(split(&out[..n]).1, 257);
    s.data_prefix(257, 0, 8).unwrap();
    s.send_data_end(257, &mut out).unwrap();
    assert_eq!(s.open_streams(), 0, "one shard ends a selected request");
    // Without the advertisement the entry is stepped over.
    let mut s = open_server(Capabilities::PARALLEL_STREAMS);
    server_feed(&mut s, 2, &msg(3, 256, &p));
    assert_eq!(s.shard_select(256), None);
    assert!(s.may_shard(256));
}
