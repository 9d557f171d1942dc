//! The `hurray` command: inspect, list, verify and extract hurray tensor
//! descriptors, streams and `.hrry` files.
//!
//! Data goes to standard output, diagnostics to standard error. Exit
//! status: 0 when every input is valid; 1 when one is not or cannot be
//! read (the typed error and the byte offset it refers to on standard
//! error; the other inputs are still processed); 2 on a usage error (a bad
//! option, a name or index the input does not hold).

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hurray_cli::container::{self, Item, StreamFailure, TensorRecord};
use hurray_cli::descriptor;
use hurray_cli::input::{self, FileBytes, Input, Kind};
use hurray_cli::progress::Progress;
use hurray_core::file::FileError;
use hurray_core::{DescriptorError, ReadOptions, TensorView};

#[derive(Debug, Parser)]
#[command(
    name = "hurray",
    version,
    about = "Inspect, list, verify and extract hurray tensor descriptors, streams and .hrry files",
    long_about = "Inspect, list, verify and extract hurray tensor descriptors, streams and .hrry \
                  files.\n\nAn input is told apart by its first bytes: \"HRRYFILE\" is a file, \
                  \"HRRY\" with a descriptor_length at least the input's length is one \
                  descriptor, anything else is read as a stream. `-` is standard input.\n\n\
                  Exit status: 0 when every input is valid, 1 when one is not (the error and its \
                  byte offset on standard error), 2 on a usage error."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show what each input holds: an annotated dump, or one JSON object per input.
    Inspect {
        /// One JSON object per input, one per line (the format is documented in the README).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        read: ReadArgs,
        /// Inputs (`-`: standard input).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// List the tensors of each input: name (a stream's index), type, shape, bytes.
    Ls {
        #[command(flatten)]
        read: ReadArgs,
        /// Inputs (`-`: standard input).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Check every rule of the format; print nothing when the inputs are valid.
    Verify {
        #[command(flatten)]
        read: ReadArgs,
        /// Inputs (`-`: standard input).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Write a tensor's buffer bytes (in table order) to standard output.
    Cat {
        #[command(flatten)]
        read: ReadArgs,
        /// The input (`-`: standard input).
        #[arg(value_name = "PATH")]
        path: PathBuf,
        /// The tensor: its name in a file, its index (from 0) in a stream.
        #[arg(value_name = "NAME")]
        name: String,
    },
    /// Serve the tensors of .hrry files over the network and store pushed ones.
    Serve(hurray_cli::net::ServeArgs),
    /// Fetch a tensor from a server into a new one-tensor .hrry file.
    Get(hurray_cli::net::GetArgs),
    /// Push a tensor of a .hrry file to a server.
    Put(hurray_cli::net::PutArgs),
    /// Convert a safetensors file into a .hrry file (values unchanged).
    Convert {
        /// The safetensors file.
        #[arg(value_name = "SAFETENSORS")]
        input: PathBuf,
        /// The .hrry file to write (appears only once complete).
        #[arg(value_name = "OUTPUT")]
        output: PathBuf,
    },
    /// Load a .hrry file's tensors onto the GPU and report GB/s.
    #[cfg(feature = "gpu")]
    Load(hurray_cli::load::LoadArgs),
}

/// How inputs are read.
#[derive(Debug, Args)]
struct ReadArgs {
    /// Read every input as this, instead of telling by its first bytes.
    #[arg(long, value_enum, default_value_t = Format::Auto)]
    format: Format,
    /// Accept this private layout id (decimal or 0x hex; repeatable).
    #[arg(long = "extension-layout", value_name = "ID", value_parser = parse_id)]
    extension_layouts: Vec<u64>,
    /// Accept private quantization schemes.
    #[arg(long)]
    private_schemes: bool,
    /// Accept private composition rules.
    #[arg(long)]
    private_composition_rules: bool,
}

impl ReadArgs {
    fn options(&self) -> ReadOptions<'_> {
        ReadOptions {
            extension_layouts: &self.extension_layouts,
            private_schemes: self.private_schemes,
            private_composition_rules: self.private_composition_rules,
        }
    }

    const fn forced(&self) -> Option<Kind> {
        match self.format {
            Format::Auto => None,
            Format::Descriptor => Some(Kind::Descriptor),
            Format::Stream => Some(Kind::Stream),
            Format::File => Some(Kind::File),
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    /// By the first bytes.
    Auto,
    /// One tensor descriptor.
    Descriptor,
    /// A stream.
    Stream,
    /// A .hrry file.
    File,
}

fn parse_id(s: &str) -> Result<u64, String> {
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    }
    .map_err(|_| format!("`{s}` is not a layout id (decimal or 0x hex)"))
}

/// Why one input failed.
enum Failure {
    /// Bad input (exit 1): the message is printed after `PATH: `.
    Invalid(String),
    /// The command line asked for what the input lacks (exit 2).
    Usage(String),
    /// Standard output is closed (e.g. piped into `head`): stop quietly.
    Closed,
}

fn descriptor_error(e: DescriptorError) -> Failure {
    Failure::Invalid(format!(
        "error at byte {}: {} [{:?}]",
        e.offset(),
        e.kind(),
        e.kind()
    ))
}

fn file_error(e: FileError) -> Failure {
    Failure::Invalid(format!(
        "error at byte {}: {} [{:?}]",
        e.offset(),
        e.kind(),
        e.kind()
    ))
}

fn stream_error(e: StreamFailure) -> Failure {
    match e {
        StreamFailure::Io(e) => Failure::Invalid(format!("cannot read: {e}")),
        StreamFailure::Invalid(e) => Failure::Invalid(format!(
            "error at byte {}: stream tensor {}: {} [{:?}]",
            e.offset(),
            e.tensor(),
            e.kind(),
            e.kind()
        )),
    }
}

fn write_out(out: &mut dyn Write, bytes: &[u8]) -> Result<(), Failure> {
    out.write_all(bytes).map_err(|e| {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::Closed
        } else {
            Failure::Invalid(format!("cannot write to standard output: {e}"))
        }
    })
}

fn open(path: &Path, read: &ReadArgs) -> Result<Input, Failure> {
    input::open(path, read.forced()).map_err(|e| Failure::Invalid(format!("cannot read: {e}")))
}

fn progress_for(input: &Input, what: &str) -> Progress {
    match input {
        Input::Descriptor(_) => Progress::hidden(),
        Input::Stream(_, len) => Progress::for_bytes(*len, what),
        Input::File(b) => Progress::for_bytes(Some(b.bytes().len() as u64), what),
    }
}

fn file_bytes(b: &FileBytes) -> &[u8] {
    b.bytes()
}

fn inspect(
    path: &Path,
    name: &str,
    read: &ReadArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let input = open(path, read)?;
    let progress = progress_for(&input, name);
    let text = match input {
        Input::Descriptor(bytes) => {
            let view = TensorView::parse_with(&bytes, &read.options()).map_err(descriptor_error)?;
            if json {
                let mut s = serde_json::to_string(&descriptor::record(name, &view))
                    .map_err(|e| Failure::Invalid(format!("internal error: {e}")))?;
                s.push('\n');
                s
            } else {
                descriptor::dump(name, &view)
                    .map_err(|e| Failure::Invalid(format!("internal error: {e}")))?
            }
        }
        Input::File(b) => {
            let options = container::file_options(read.options());
            let mut table = Vec::new();
            let view =
                container::file_view(file_bytes(&b), &options, &mut table).map_err(file_error)?;
            let record = container::file_record(name, &view, &progress);
            if json {
                let mut s = serde_json::to_string(&record)
                    .map_err(|e| Failure::Invalid(format!("internal error: {e}")))?;
                s.push('\n');
                s
            } else {
                let mut s = format!(
                    "{name}: hurray file {}.{}, alignment {}, {} tensor(s), {} KV entr{}\n",
                    record.version[0],
                    record.version[1],
                    record.alignment,
                    record.tensors.len(),
                    record.kv.len(),
                    if record.kv.len() == 1 { "y" } else { "ies" }
                );
                s.push_str(&tensor_table(&record.tensors, true));
                for (k, v) in &record.kv {
                    s.push_str(&format!("  kv {k} = {v}\n"));
                }
                s.push_str("= valid\n");
                s
            }
        }
        Input::Stream(mut r, _) => {
            let tensors = container::stream_tensors(&mut r, read.options(), &progress)
                .map_err(stream_error)?;
            if json {
                let record = container::StreamRecord {
                    format: "stream",
                    file: name.to_owned(),
                    tensors,
                };
                let mut s = serde_json::to_string(&record)
                    .map_err(|e| Failure::Invalid(format!("internal error: {e}")))?;
                s.push('\n');
                s
            } else {
                let mut s = format!("{name}: hurray stream, {} tensor(s)\n", tensors.len());
                s.push_str(&tensor_table(&tensors, true));
                s.push_str("= valid\n");
                s
            }
        }
    };
    progress.finish();
    write_out(out, text.as_bytes())
}

/// One line per tensor: name or index, type, shape, layout, bytes (and the
/// offsets and digest when `long`).
fn tensor_table(tensors: &[TensorRecord], long: bool) -> String {
    let mut s = String::new();
    for t in tensors {
        let id = match (&t.name, t.index) {
            (Some(n), _) => n.clone(),
            (None, Some(i)) => i.to_string(),
            (None, None) => "-".to_owned(),
        };
        let mut line = format!(
            "{id}\t{}\t{}\t{}",
            t.element_type,
            t.shape_text(),
            t.bytes()
        );
        if long {
            line.push_str(&format!(
                "\tlayout {}{}",
                hurray_core::layout::name_of(t.layout_tag),
                match t.members {
                    Some(m) => format!(" ({m} members)"),
                    None => String::new(),
                }
            ));
            if let (Some(d), Some(o)) = (t.descriptor_offset, t.data_offset) {
                line.push_str(&format!("\tdescriptor@{d} data@{o}"));
            }
            line.push_str(&format!("\tsha256 {}", t.data_sha256));
        }
        line.push('\n');
        if long {
            s.push_str("  ");
        }
        s.push_str(&line);
    }
    s
}

fn ls(path: &Path, name: &str, read: &ReadArgs, out: &mut dyn Write) -> Result<(), Failure> {
    let input = open(path, read)?;
    let progress = progress_for(&input, name);
    let tensors = match input {
        Input::Descriptor(bytes) => {
            let view = TensorView::parse_with(&bytes, &read.options()).map_err(descriptor_error)?;
            vec![TensorRecord::from_view(&view)]
        }
        Input::File(b) => {
            let options = container::file_options(read.options());
            let mut table = Vec::new();
            let view =
                container::file_view(file_bytes(&b), &options, &mut table).map_err(file_error)?;
            // Index order (by name when the index is sorted); no data is read.
            view.iter()
                .map(|t| {
                    let mut r = TensorRecord::from_view(t.descriptor());
                    r.name = Some(t.name().to_owned());
                    r
                })
                .collect()
        }
        Input::Stream(mut r, _) => {
            let mut v = Vec::new();
            container::walk_stream(&mut r, read.options(), &progress, |item| {
                if let Item::Tensor(i, mut t) = item {
                    t.index = Some(i);
                    v.push(t);
                }
                ControlFlow::Continue(())
            })
            .map_err(stream_error)?;
            v
        }
    };
    progress.finish();
    write_out(out, tensor_table(&tensors, false).as_bytes())
}

fn verify(path: &Path, name: &str, read: &ReadArgs) -> Result<(), Failure> {
    let input = open(path, read)?;
    let progress = progress_for(&input, name);
    match input {
        Input::Descriptor(bytes) => {
            TensorView::parse_with(&bytes, &read.options()).map_err(descriptor_error)?;
        }
        Input::File(b) => {
            let options = container::file_options(read.options());
            let mut table = Vec::new();
            container::file_view(file_bytes(&b), &options, &mut table).map_err(file_error)?;
        }
        Input::Stream(mut r, _) => {
            container::walk_stream(&mut r, read.options(), &progress, |_| {
                ControlFlow::Continue(())
            })
            .map_err(stream_error)?;
        }
    }
    progress.finish();
    Ok(())
}

fn cat(path: &Path, name: &str, read: &ReadArgs, tensor: &str) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let input = open(path, read)?;
    let progress = progress_for(&input, name);
    match input {
        Input::Descriptor(bytes) => {
            TensorView::parse_with(&bytes, &read.options()).map_err(descriptor_error)?;
            return Err(Failure::Usage(
                "a descriptor holds no buffer bytes (cat reads files and streams)".to_owned(),
            ));
        }
        Input::File(b) => {
            let options = container::file_options(read.options());
            let mut table = Vec::new();
            let view =
                container::file_view(file_bytes(&b), &options, &mut table).map_err(file_error)?;
            let t = view
                .get(tensor)
                .ok_or_else(|| Failure::Usage(format!("no tensor named `{tensor}`")))?;
            for b in t.buffers() {
                write_out(&mut out, b)?;
            }
        }
        Input::Stream(mut r, _) => {
            let want: u64 = tensor.parse().map_err(|_| {
                Failure::Usage(format!(
                    "`{tensor}` is not a tensor index (a stream's tensors are named by their index from 0)"
                ))
            })?;
            let mut seen = 0u64;
            let mut inside = false;
            let mut failed = None;
            container::walk_stream(&mut r, read.options(), &progress, |item| match item {
                Item::Tensor(i, _) => {
                    seen = i + 1;
                    inside = i == want;
                    ControlFlow::Continue(())
                }
                Item::Data(bytes) if inside => match write_out(&mut out, bytes) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(e) => {
                        failed = Some(e);
                        ControlFlow::Break(())
                    }
                },
                Item::End if inside => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            })
            .map_err(stream_error)?;
            if let Some(e) = failed {
                return Err(e);
            }
            if !inside {
                return Err(Failure::Usage(format!(
                    "no tensor {want}: the stream holds {seen}"
                )));
            }
        }
    }
    progress.finish();
    out.flush().map_err(|_| Failure::Closed)
}

fn net_status(r: Result<(), hurray_cli::net::NetFailure>) -> ExitCode {
    r.map_or_else(hurray_cli::net::NetFailure::report, |()| ExitCode::SUCCESS)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let stdout = io::stdout();
    let mut status = 0u8;
    let mut run = |path: &Path, f: &mut dyn FnMut(&Path, &str) -> Result<(), Failure>| {
        let name = if path.as_os_str() == "-" {
            "<stdin>".to_owned()
        } else {
            path.display().to_string()
        };
        match f(path, &name) {
            Ok(()) => true,
            Err(Failure::Invalid(msg)) => {
                eprintln!("{name}: {msg}");
                status = status.max(1);
                true
            }
            Err(Failure::Usage(msg)) => {
                eprintln!("hurray: {name}: {msg}");
                status = 2;
                true
            }
            Err(Failure::Closed) => false,
        }
    };
    match &cli.command {
        Command::Inspect { json, read, paths } => {
            let mut out = stdout.lock();
            for p in paths {
                if !run(p, &mut |p, n| inspect(p, n, read, *json, &mut out)) {
                    break;
                }
            }
        }
        Command::Ls { read, paths } => {
            let mut out = stdout.lock();
            for p in paths {
                if !run(p, &mut |p, n| ls(p, n, read, &mut out)) {
                    break;
                }
            }
        }
        Command::Verify { read, paths } => {
            for p in paths {
                run(p, &mut |p, n| verify(p, n, read));
            }
        }
        Command::Cat { read, path, name } => {
            run(path, &mut |p, n| cat(p, n, read, name));
        }
        Command::Serve(a) => return net_status(hurray_cli::net::serve(a)),
        Command::Get(a) => return net_status(hurray_cli::net::get(a)),
        Command::Put(a) => return net_status(hurray_cli::net::put(a)),
        Command::Convert { input, output } => {
            run(input, &mut |p, _| {
                let c = hurray_cli::convert::safetensors_to_hrry(p, output)
                    .map_err(|e| Failure::Invalid(e.to_string()))?;
                println!(
                    "{}: {} tensors, {} bytes",
                    output.display(),
                    c.tensors,
                    c.bytes
                );
                Ok(())
            });
        }
        #[cfg(feature = "gpu")]
        Command::Load(args) => {
            run(&args.path, &mut |p, _| {
                let r = hurray_cli::load::run(args).map_err(Failure::Invalid)?;
                println!("{}", r.line(p));
                Ok(())
            });
        }
    }
    ExitCode::from(status)
}
