//! Any bytes through the network framer and message decoders: never a
//! panic; `Partial` asks for more than it was given; an oversized header is
//! refused whatever follows it; a message that decodes re-encodes to the
//! same bytes (the codec is canonical), except two allowed differences: a
//! hello without its optional memory-class list gains an empty one, and an
//! error text longer than we send is cut.
#![no_main]

use hurray_core::net::{Frame, MAX_ERROR_TEXT, MESSAGE_HEADER_LEN, Message, NetErrorKind, Status};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the maximum message size.
    let Some((&pick, bytes)) = data.split_first() else {
        return;
    };
    let max = match pick % 4 {
        0 => 0,
        1 => 64,
        2 => 4096,
        _ => u32::MAX,
    };
    let mut rest = bytes;
    // Walk the messages in the input, as a receiver would.
    for _ in 0..64 {
        match Frame::parse(rest, max) {
            Ok(Status::Partial { needed }) => {
                assert!(needed > rest.len());
                assert!(needed <= MESSAGE_HEADER_LEN + max as usize);
                return;
            }
            Ok(Status::Complete(frame)) => {
                assert!(frame.payload().len() as u64 <= u64::from(max));
                let n = frame.len();
                if let Ok(m) = Message::decode(&frame) {
                    assert!(m.encoded_len() >= MESSAGE_HEADER_LEN);
                    // We send at most MAX_ERROR_TEXT bytes of text: a longer
                    // one re-encodes shorter.
                    if matches!(m, Message::Error(e) if e.text.len() > MAX_ERROR_TEXT) {
                        rest = &rest[n..];
                        continue;
                    }
                    let mut out = vec![0u8; m.encoded_len()];
                    let w = m.encode(frame.stream_id(), &mut out).expect("re-encode");
                    let hello_grew = matches!(m, Message::ClientHello(_) | Message::ServerHello(_))
                        && w == n + 2;
                    if !hello_grew {
                        assert_eq!(&out[..w], &rest[..n], "{m:?}");
                    }
                    let Ok(Status::Complete(again)) = Frame::parse(&out[..w], u32::MAX) else {
                        panic!("re-encoded bytes do not frame");
                    };
                    assert_eq!(Message::decode(&again).as_ref(), Ok(&m));
                }
                rest = &rest[n..];
            }
            Err(e) => {
                assert_eq!(e.offset(), 8);
                assert!(matches!(e.kind(), NetErrorKind::TooLarge { length, .. } if length > max));
                return;
            }
        }
    }
});
