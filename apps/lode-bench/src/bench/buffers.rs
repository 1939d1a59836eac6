//! `--socket-buffer BYTES`: one option, one meaning, for every command that starts
//! servers side by side (`compare`, `compare-updates`, `attack`).

/// The socket buffer size of a run.
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct SocketBufferArg {
    /// Socket receive and send buffer of every server, bytes as the kernel accounts
    /// them (`ss -m` rb/tb): net.core.rmem_default/wmem_default set to it for the run
    /// (maxima raised if lower; all restored at the end, on errors and on Ctrl-C), and
    /// the servers with an option of their own asked for it. 0: leave the kernel and
    /// the servers as they are.
    #[arg(long, value_name = "BYTES", default_value_t = lode_bench::sockbuf::DEFAULT)]
    socket_buffer: u64,
}

impl SocketBufferArg {
    /// The size to set (None: 0, leave everything alone).
    pub(crate) fn size(self) -> Option<u64> {
        (self.socket_buffer > 0).then_some(self.socket_buffer)
    }
}
