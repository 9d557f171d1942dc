//! A client session that asked for a tensor (plainly, and as parallel
//! shards) and started a put, fed any bytes from the "server", cut
//! anywhere: never a panic; `handle` consumes only what it was given; every
//! data event it reports is in order and inside its descriptor's total;
//! every control message it owes frames and decodes.
#![no_main]

use std::collections::HashMap;

use hurray_core::net::*;
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor};
use libfuzzer_sys::fuzz_target;

const CONFIG: ClientConfig<'static> = ClientConfig {
    hello: Hello {
        protocol_version: PROTOCOL_VERSION,
        max_message_size: 2048,
        capabilities: Capabilities::NONE,
        layouts: LayoutList::EMPTY,
        devices: &[0x00],
        memory_classes: &[],
    },
    handshake_timeout: 50,
    idle_timeout: 200,
    request_timeout: 100,
};

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let step = usize::from(cut % 32) + 1;
    let mut c = ClientSession::<8>::new(CONFIG, 0);
    let mut out = vec![0u8; 4096];
    while c.poll_transmit(&mut out).unwrap().is_some() {}
    // The server's hello, so the fuzzer starts inside the session.
    let sh = Hello {
        capabilities: Capabilities::PARALLEL_STREAMS,
        ..CONFIG.hello
    };
    let n = Message::ServerHello(sh).encode(0, &mut out).unwrap();
    let hello = out[..n].to_vec();
    let Ok(Status::Complete((ClientEvent::Connected(_), _))) = c.handle(0, &hello) else {
        panic!("handshake");
    };
    let req = TensorRequest {
        key: "t",
        preferred_layouts: LayoutList::EMPTY,
        preferred_device: 0,
        min_alignment: 64,
        flags: RequestFlags::NONE,
    };
    c.request(0, 1, &req, &mut out).unwrap();
    let par = TensorRequest {
        flags: RequestFlags::PARALLEL_OK,
        ..req
    };
    c.request(0, 256, &par, &mut out).unwrap();
    let buffers = [BufferHandle::new(4, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let mut d = [0u8; 128];
    let view = TensorDescriptor::row_major(ElementType::UInt8, &[4], &buffers)
        .encode_view(&mut d)
        .unwrap();
    c.put(
        2,
        &TensorPut {
            key: "p",
            descriptor: view,
            total_data_bytes: 4,
        },
        &mut out,
    )
    .unwrap();
    c.send_data(2, 0, &[1, 2, 3, 4], &mut out).unwrap();
    c.send_data_end(0, 2, &mut out).unwrap();

    // Where each stream's data stands, as the events report it.
    let mut progress: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut pending = Vec::new();
    let mut now = 0;
    for chunk in bytes.chunks(step) {
        pending.extend_from_slice(chunk);
        now += u64::from(cut % 5);
        for _ in 0..64 {
            match c.handle(now, &pending) {
                Ok(Status::Complete((event, used))) => {
                    assert!(used <= pending.len());
                    match event {
                        ClientEvent::Descriptor {
                            stream_id, message, ..
                        } => {
                            progress.insert(stream_id, (message.total_data_bytes, 0));
                        }
                        ClientEvent::Data {
                            stream_id, frame, ..
                        } => {
                            let p = progress
                                .get_mut(&stream_id)
                                .expect("data after a descriptor");
                            assert_eq!(frame.offset, p.1);
                            p.1 += frame.data.len() as u64;
                            assert!(p.1 <= p.0 && !frame.data.is_empty());
                        }
                        ClientEvent::DataEnd { stream_id, .. } => {
                            let p = progress.remove(&stream_id).expect("end after a descriptor");
                            assert_eq!(p.0, p.1);
                        }
                        ClientEvent::StreamError(e) => {
                            progress.remove(&e.stream_id);
                        }
                        _ => {}
                    }
                    pending.drain(..used);
                    if used == 0 || pending.is_empty() {
                        break;
                    }
                }
                Ok(Status::Partial { needed }) => {
                    assert!(needed > pending.len());
                    break;
                }
                Err(_) => {
                    assert!(c.is_closed());
                    return;
                }
            }
        }
        let _ = c.handle_timeout(now);
        while let Some(len) = c.poll_transmit(&mut out).unwrap() {
            let Ok(Status::Complete(f)) = Frame::parse(&out[..len], u32::MAX) else {
                panic!("control message does not frame");
            };
            Message::decode(&f).unwrap();
        }
    }
});
