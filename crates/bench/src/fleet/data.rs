//! The zone a fleet run serves: the ENUM set, or a TLD zone with its
//! registry stream read back and its referral queries.

use super::*;

/// Updates a TLD run may send: see [`registry::stream_length`].
pub(super) fn stream_need(cfg: &FleetConfig) -> f64 {
    match cfg.experiment {
        Experiment::Propagation => (cfg.updates * cfg.rates.len() as u64) as f64,
        Experiment::IxfrLoad => {
            let secs = search_secs(cfg);
            let per_rate: f64 = cfg
                .rates
                .iter()
                .map(|&r| {
                    if r.is_infinite() {
                        registry::FULL_SPEED_GUESS * 2.0 * secs
                    } else {
                        registry::cell_updates(r, secs, 0, 0, 0) as f64 * f64::from(r > 0.0)
                    }
                })
                .sum();
            per_rate * cfg.secondaries.len() as f64
        }
        Experiment::Axfr => 1.0,
    }
}

/// The zone a run serves and, on TLD data, its stream and referral queries.
#[derive(Debug)]
pub(super) struct FleetZone {
    /// The apex, with the final dot.
    pub(super) apex: String,
    /// The zone file.
    pub(super) file: PathBuf,
    /// TLD data: the registry stream and the referral queries.
    pub(super) tld: Option<TldData>,
}

/// What `lode-bench gen tld` wrote that a run uses besides the zone.
#[derive(Debug)]
pub(super) struct TldData {
    /// Delegations in the zone.
    pub(super) delegations: u64,
    /// The registry stream, read back.
    pub(super) stream: Vec<registry::StreamUpdate>,
    /// queries-referral.txt.
    pub(super) referrals: PathBuf,
}

/// The ENUM zone of `cfg.records` numbers.
pub(super) fn enum_zone(cfg: &FleetConfig) -> Result<FleetZone, FleetError> {
    let set_dir = cfg.work.join("set");
    let t = Instant::now();
    let mut spec = EnumSetSpec::new(cfg.records, 1);
    spec.queries = Some(cfg.records.min(1_000_000));
    let set = enumset::generate(&spec, &set_dir)
        .map_err(|e| FleetError::Config(format!("generating the zone: {e}")))?;
    let (apex, file) = set
        .zone_files
        .first()
        .cloned()
        .ok_or_else(|| FleetError::Config("the generator wrote no zone".into()))?;
    say(&format!(
        "zone {apex}: {} records in {:.1} s",
        cfg.records,
        t.elapsed().as_secs_f64()
    ));
    Ok(FleetZone {
        apex,
        file,
        tld: None,
    })
}

/// The TLD zone of `delegations`, its registry stream (as long as the run may
/// need) read back, and its referral queries.
pub(super) fn tld_zone(cfg: &FleetConfig, delegations: u64) -> Result<FleetZone, FleetError> {
    let dir = cfg.work.join("tld");
    let t = Instant::now();
    let mut spec = TldSpec::new("com", delegations);
    spec.queries = 200_000;
    spec.updates = registry::stream_length(delegations, stream_need(cfg));
    spec.command = format!("lode-bench fleet --tld {delegations}");
    let sum = tld::generate(&spec, &dir).map_err(|e| {
        FleetError::Config(format!("generating the TLD data in {}: {e}", dir.display()))
    })?;
    // The pace files hold the same updates; only their headers differ.
    let stream_file = PACES
        .iter()
        .zip(&sum.update_files)
        .find(|(p, _)| p.name == "medium")
        .or_else(|| PACES.iter().zip(&sum.update_files).next())
        .map(|(_, f)| f.clone())
        .ok_or_else(|| FleetError::Config("the generator wrote no update stream".into()))?;
    let referrals = sum
        .query_files
        .first()
        .cloned()
        .ok_or_else(|| FleetError::Config("the generator wrote no query file".into()))?;
    // axfr sends no update.
    let stream = if spec.updates == 0 || cfg.experiment == Experiment::Axfr {
        Vec::new()
    } else {
        registry::read_stream(&stream_file, spec.updates as usize)?
    };
    say(&format!(
        "zone {}: {delegations} delegations, {} records; stream {} ({} updates) in {:.1} s",
        sum.apex,
        sum.zone.records,
        stream_file.display(),
        stream.len(),
        t.elapsed().as_secs_f64()
    ));
    Ok(FleetZone {
        apex: sum.apex,
        file: sum.zone_file,
        tld: Some(TldData {
            delegations,
            stream,
            referrals,
        }),
    })
}
