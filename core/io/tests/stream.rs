//! The std shells: what they add to the core machine (refills, sources that
//! fail or are interrupted, error conversion, `next_tensor`), over streams
//! our writer produces.

use std::io::{self, Read};

use hurray_core::stream::{StreamErrorKind, StreamLimits};
use hurray_core::{BufferHandle, DeviceTag, ElementType, SyncMode, TensorDescriptor, TensorView};
use hurray_io::stream::{Options, ReadError, StreamReader, StreamWriter};

fn tensor(n: u64) -> Vec<u8> {
    let h = [BufferHandle::new(n, 64, DeviceTag::Cpu, SyncMode::ProducerSynced).unwrap()];
    let shape = [n];
    let d = TensorDescriptor::row_major(ElementType::UInt8, &shape, &h);
    let mut out = vec![0u8; d.encoded_len()];
    let len = d.encode(&mut out).unwrap();
    out.truncate(len);
    out
}

fn stream(sizes: &[u64]) -> Vec<u8> {
    let mut w = StreamWriter::new(Vec::new());
    for &n in sizes {
        let d = tensor(n);
        let data: Vec<u8> = (0..n).map(|i| i as u8).collect();
        w.write_tensor(&TensorView::parse(&d).unwrap(), &[&data])
            .unwrap();
    }
    w.finish().unwrap()
}

/// A source that hands out at most 3 bytes a read, interrupted every other
/// call, then fails or ends.
struct Stutter<'a> {
    bytes: &'a [u8],
    calls: usize,
    fail_at_end: bool,
}

impl Read for Stutter<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls & 1 == 0 {
            return Err(io::ErrorKind::Interrupted.into());
        }
        if self.bytes.is_empty() && self.fail_at_end {
            return Err(io::Error::other("the cable came out"));
        }
        let n = buf.len().min(3).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

#[test]
fn a_slow_interrupted_source_gives_the_same_tensors() {
    let s = stream(&[5, 0, 130, 64]);
    let src = Stutter {
        bytes: &s,
        calls: 0,
        fail_at_end: false,
    };
    let mut r = StreamReader::new(src);
    let mut sizes = Vec::new();
    while let Some(t) = r.next_tensor().unwrap() {
        sizes.push(t.buffers[0].len());
        assert!(t.buffers[0].iter().enumerate().all(|(i, &b)| b == i as u8));
        assert_eq!(t.depth, 0);
    }
    assert_eq!(sizes, [5, 0, 130, 64]);
    // After the end: still the end.
    assert!(r.next_event().unwrap().is_none());
}

#[test]
fn a_failing_source_is_an_io_error_and_a_cut_stream_a_typed_one() {
    let s = stream(&[40]);
    let src = Stutter {
        bytes: &s[..50],
        calls: 0,
        fail_at_end: true,
    };
    let mut r = StreamReader::new(src);
    let err = loop {
        match r.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a failing source ended cleanly"),
            Err(e) => break e,
        }
    };
    assert!(matches!(&err, ReadError::Io(e) if e.to_string() == "the cable came out"));

    let mut r = StreamReader::new(&s[..50]);
    let err = loop {
        match r.next_event() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("a cut stream ended cleanly"),
            Err(e) => break e,
        }
    };
    let ReadError::Stream(e) = &err else {
        panic!("{err:?}")
    };
    assert!(matches!(e.kind(), StreamErrorKind::UnexpectedEof { .. }));
    assert_eq!(e.offset(), 50);
    let io: io::Error = err.into();
    assert_eq!(io.kind(), io::ErrorKind::InvalidData);
}

#[test]
fn next_tensor_is_bounded_by_the_limits() {
    let s = stream(&[16, 4096]);
    let options = Options {
        limits: StreamLimits::DEFAULT.max_buffer_bytes(1024),
        ..Options::DEFAULT
    };
    let mut r = StreamReader::with_options(&s[..], options);
    assert_eq!(r.next_tensor().unwrap().unwrap().buffers[0].len(), 16);
    let err = r.next_tensor().unwrap_err();
    assert!(matches!(
        err,
        ReadError::Stream(e) if e.kind() == StreamErrorKind::BufferTooLarge { buffer: 0, size: 4096, limit: 1024 }
    ));
}

#[test]
fn the_tokio_and_blocking_shells_agree() {
    let s = stream(&[3, 0, 300]);
    let mut blocking = Vec::new();
    let mut r = StreamReader::with_options(
        &s[..],
        Options {
            input_buffer: 16,
            ..Options::DEFAULT
        },
    );
    while let Some(t) = r.next_tensor().unwrap() {
        blocking.push(t);
    }
    assert_eq!(blocking.len(), 3);
    #[cfg(feature = "tokio")]
    {
        use hurray_core::stream::Event;
        use hurray_io::stream::{AsyncStreamReader, AsyncStreamWriter};
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let mut w = AsyncStreamWriter::new(Vec::new());
            for t in &blocking {
                let v = TensorView::parse(&t.descriptor).unwrap();
                let bufs: Vec<&[u8]> = t.buffers.iter().map(Vec::as_slice).collect();
                w.write_tensor(&v, &bufs).await.unwrap();
            }
            let again = w.finish().await.unwrap();
            assert_eq!(again, s, "the async writer writes the same bytes");
            let mut r = AsyncStreamReader::new(&again[..]);
            let mut data = 0;
            while let Some(ev) = r.next_event().await.unwrap() {
                if let Event::Data { bytes, .. } = ev {
                    data += bytes.len();
                }
            }
            assert_eq!(data, 303);
        });
    }
}
