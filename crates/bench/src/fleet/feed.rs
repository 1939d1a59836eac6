//! Where ixfr-load's updates come from: an ENUM update plan, or the TLD's
//! registry stream; and what a cell's stream did.

use super::*;

/// What an ixfr-load cell's update stream did.
#[derive(Debug, Clone, Copy)]
pub(super) struct CellUpdates {
    /// Updates answered NOERROR.
    pub(super) ok: u64,
    /// Updates sent.
    pub(super) sent: u64,
    /// Seconds the stream ran (to its last update sent, or its last reply).
    pub(super) secs: f64,
    /// Whether it sent every update it was given (and so may have ended early).
    pub(super) used_up: bool,
}

/// Where ixfr-load's updates come from.
#[derive(Debug)]
pub(super) enum Feed<'a> {
    /// ENUM changes of an [`UpdatePlan`]; `first` is the next one.
    Plan { plan: UpdatePlan, first: u64 },
    /// The TLD's registry stream; `cursor` says which update is next.
    Registry {
        data: &'a TldData,
        cursor: registry::Cursor,
    },
}

impl Feed<'_> {
    /// Runs `load` while the primary takes updates at `cells[k]` per second;
    /// returns its outcome and the stream's.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn during<T: Send>(
        &mut self,
        cfg: &FleetConfig,
        primary: &Node,
        zone: &Name,
        cells: &[f64],
        k: usize,
        search_secs: f64,
        load: impl FnOnce() -> T + Send,
    ) -> Result<(T, CellUpdates), FleetError> {
        let rate = cells.get(k).copied().unwrap_or(0.0);
        match self {
            Feed::Plan { plan, first } => {
                let ucfg = UpdateConfig {
                    server: primary.addr,
                    rate,
                    // Twice the estimate: the stream must outlast the search (it is
                    // stopped when the search returns).
                    count: (rate * 2.0 * search_secs).ceil() as u64 + 1,
                    first: *first,
                    timeout: Duration::from_secs(2),
                    key: Some(cfg.key.clone()),
                };
                let (out, upd) = during_updates(
                    &ucfg,
                    plan,
                    Duration::from_secs_f64(search_secs * 4.0),
                    load,
                );
                let upd = upd.map_err(|e| FleetError::Tester(format!("update stream: {e}")))?;
                *first += upd.sent;
                let used_up = upd.sent >= ucfg.count;
                Ok((
                    out,
                    CellUpdates {
                        ok: upd.ok(),
                        sent: upd.sent,
                        secs: upd.secs,
                        used_up,
                    },
                ))
            }
            Feed::Registry { data, cursor } => {
                let want = registry::cell_share(cells, k, search_secs, cursor.left());
                let range = cursor.take(want);
                let slice = &data.stream[range];
                if slice.is_empty() {
                    say("  the registry stream is used up: this search runs without updates");
                    return Ok((
                        load(),
                        CellUpdates {
                            ok: 0,
                            sent: 0,
                            secs: 0.0,
                            used_up: true,
                        },
                    ));
                }
                let pc = propagation::PropagationConfig {
                    primary: primary.addr,
                    secondaries: Vec::new(),
                    zone: zone.clone(),
                    rate,
                    in_flight: cfg.in_flight,
                    key: cfg.key.clone(),
                    window: 1,
                    interval: cfg.probe_interval,
                    wait: Duration::ZERO,
                    timeout: Duration::from_secs(2),
                };
                let stop = AtomicBool::new(false);
                let (out, res) = std::thread::scope(|s| {
                    let sender = s.spawn(|| propagation::run(&pc, slice, &stop));
                    let out = load();
                    stop.store(true, Ordering::Relaxed);
                    let res = sender.join().unwrap_or_else(|_| {
                        Err(FleetError::Tester("the update sender panicked".into()))
                    });
                    (out, res)
                });
                let res = res?;
                Ok((
                    out,
                    CellUpdates {
                        ok: res.acked,
                        sent: res.sent,
                        secs: res.send_secs,
                        used_up: res.sent >= slice.len() as u64,
                    },
                ))
            }
        }
    }
}
