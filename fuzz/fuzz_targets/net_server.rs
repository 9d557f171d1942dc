//! Any bytes, cut anywhere, with time moving on, into a server session
//! whose application answers every request and put the way a real server
//! would: never a panic; every `handle` consumes bytes it was given or asks
//! for more than it has; the session owes at most a bounded queue of
//! control messages, every one of which frames and decodes; its stream
//! count never exceeds its capacity; once closed it stays closed.
#![no_main]

use hurray_core::net::*;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
use libfuzzer_sys::fuzz_target;

const CONFIG: ServerConfig<'static> = ServerConfig {
    hello: Hello {
        protocol_version: PROTOCOL_VERSION,
        max_message_size: 2048,
        capabilities: Capabilities::PARALLEL_STREAMS,
        layouts: LayoutList::EMPTY,
        devices: &[0x00],
        memory_classes: &[],
    },
    handshake_timeout: 50,
    idle_timeout: 200,
    request_timeout: 100,
};

fn drain(s: &mut ServerSession<'_, 4>) {
    let mut out = vec![0u8; s.max_control_len()];
    let mut n = 0;
    while let Some(len) = s
        .poll_transmit(&mut out)
        .expect("control buffer is large enough")
    {
        let Ok(Status::Complete(f)) = Frame::parse(&out[..len], u32::MAX) else {
            panic!("a control message does not frame");
        };
        Message::decode(&f).expect("a control message decodes");
        n += 1;
        assert!(n <= 8, "the control queue holds 8");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let step = usize::from(cut % 32) + 1;
    let buffers = [BufferHandle::new(16, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = [0u8; 128];
    let view = TensorDescriptor::row_major(ElementType::UInt8, &[16], &buffers)
        .encode_view(&mut d)
        .unwrap();
    let answer = DescriptorMessage::unsharded(view).unwrap();
    let mut s = ServerSession::<4>::new(CONFIG, 0);
    let mut pending = Vec::new();
    let mut now = 0u64;
    let mut out = vec![0u8; 4096];
    for chunk in bytes.chunks(step) {
        pending.extend_from_slice(chunk);
        now += u64::from(cut % 7);
        for _ in 0..64 {
            let was_closed = s.is_closed();
            match s.handle(now, &pending) {
                Ok(Status::Complete((event, used))) => {
                    assert!(used <= pending.len());
                    if was_closed {
                        assert_eq!(event, ServerEvent::Ignored);
                    }
                    match event {
                        ServerEvent::Request { stream_id, .. } => {
                            if s.send_descriptor(stream_id, &answer, &mut out).is_ok() {
                                s.send_data(stream_id, 0, &[7; 16], &mut out).unwrap();
                                s.send_data_end(stream_id, &mut out).unwrap();
                            }
                        }
                        ServerEvent::PutEnd { stream_id } => {
                            s.send_put_ack(stream_id, &mut out).unwrap();
                        }
                        _ => {}
                    }
                    pending.drain(..used);
                    if used == 0 || pending.is_empty() {
                        break;
                    }
                }
                Ok(Status::Partial { needed }) => {
                    assert!(needed > pending.len() && needed <= 12 + 2048);
                    break;
                }
                Err(_) => {
                    assert!(s.is_closed());
                    pending.clear();
                    break;
                }
            }
        }
        if let Some(t) = s.poll_timeout() {
            if t <= now {
                let _ = s.handle_timeout(now);
            }
        }
        assert!(s.open_streams() <= 4);
        drain(&mut s);
    }
});
