//! A worker's place in a data-parallel job and its connection to the others: the torchrun
//! environment (`RANK`, `LOCAL_RANK`, `WORLD_SIZE`, ...), the rendezvous on c10d's TCPStore,
//! and the process group + gradient reducer the engine trains with (device_sdaa::dist).

use std::time::{Duration, Instant};

use device_sdaa::dist::{DistError, ProcessGroup, ReduceOp, Reducer, Store};
use device_sdaa::Device;
use tch::Tensor;

use crate::EngineError;

/// Where this process stands in the job, read from the environment torchrun (or
/// `run_<model> --nproc_per_node`) gives its workers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorldInfo {
    pub rank: usize,
    pub local_rank: usize,
    pub world_size: usize,
    pub local_world_size: usize,
    /// The node's rank (`GROUP_RANK`).
    pub node_rank: usize,
    pub master_addr: String,
    pub master_port: u16,
    /// `TORCHELASTIC_USE_AGENT_STORE=True`: the launcher serves the store, every rank connects.
    pub agent_store: bool,
    /// `TORCHELASTIC_RESTART_COUNT`: keys of each attempt are kept apart.
    pub attempt: u64,
}

fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_number<T: std::str::FromStr>(name: &str, default: Option<T>) -> Result<T, EngineError> {
    match env_var(name) {
        Some(v) => v.trim().parse().map_err(|_| {
            EngineError::Settings(format!(
                "environment variable {name}={v:?} is not a valid number (set by the launcher: torchrun or run_<model> --nproc_per_node)"
            ))
        }),
        None => default.ok_or_else(|| {
            EngineError::Settings(format!(
                "WORLD_SIZE is set but {name} is not: start workers with torchrun or run_<model> --nproc_per_node, which set both"
            ))
        }),
    }
}

impl WorldInfo {
    /// The job from the environment; `None` when this process is not a launched worker
    /// (`WORLD_SIZE` unset).
    pub fn from_env() -> Result<Option<WorldInfo>, EngineError> {
        if env_var("WORLD_SIZE").is_none() {
            return Ok(None);
        }
        let world_size: usize = env_number("WORLD_SIZE", None)?;
        let rank: usize = env_number("RANK", None)?;
        let local_rank: usize = env_number("LOCAL_RANK", Some(rank))?;
        let info = WorldInfo {
            rank,
            local_rank,
            world_size,
            local_world_size: env_number("LOCAL_WORLD_SIZE", Some(world_size))?,
            node_rank: env_number("GROUP_RANK", Some(0))?,
            master_addr: env_var("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()),
            master_port: env_number("MASTER_PORT", Some(29500))?,
            agent_store: env_var("TORCHELASTIC_USE_AGENT_STORE").as_deref() == Some("True"),
            attempt: env_number("TORCHELASTIC_RESTART_COUNT", Some(0))?,
        };
        if world_size == 0 || rank >= world_size || local_rank >= info.local_world_size {
            return Err(EngineError::Settings(format!(
                "inconsistent launcher environment: RANK={rank} LOCAL_RANK={local_rank} WORLD_SIZE={world_size} LOCAL_WORLD_SIZE={}",
                info.local_world_size
            )));
        }
        Ok(Some(info))
    }
}

fn dist(e: DistError) -> EngineError {
    EngineError::Distributed(e.to_string())
}

/// This worker's connection to the job: the store it rendezvoused on and the device's process
/// group (Gloo / TCCL / NCCL). Built before the engine; the engine adds the reducer.
pub struct DataParallel {
    pub world: WorldInfo,
    pub group: ProcessGroup,
    reducer: Option<Reducer>,
    /// Buffers (BatchNorm running statistics): rank 0's are given to all before each step,
    /// as DDP's default `broadcast_buffers=True` does.
    buffers: Vec<Tensor>,
    store: Store,
}

/// The store prefix of one attempt's keys (`TORCHELASTIC_RESTART_COUNT`).
fn attempt_prefix(attempt: u64) -> String {
    format!("mz/attempt_{attempt}/")
}

/// The key (in the launcher's store, no prefix) a rank sets when it was itself interrupted
/// (SIGINT/SIGTERM): its peers stop with it at the agreed step and exit alike, so only this
/// says which rank the launcher should name.
pub fn interrupted_key(attempt: u64, rank: usize) -> String {
    // As c10d's PrefixStore joins them: prefix, '/', key.
    format!("{}/{}", attempt_prefix(attempt), rank_interrupted_key(rank))
}

/// [`interrupted_key`] within its attempt's prefix (what a worker's store sees).
fn rank_interrupted_key(rank: usize) -> String {
    format!("interrupted/rank_{rank}")
}

impl DataParallel {
    /// Record in the job's store that this rank itself was interrupted ([`interrupted_key`]).
    /// Best effort: without it the launcher names the first rank it saw end.
    pub fn note_interrupted(&self) {
        if let Err(e) = self.store.set(&rank_interrupted_key(self.world.rank), b"1") {
            tracing::debug!("could not record the interrupt in the store: {e}");
        }
    }

    /// Rendezvous with every rank at MASTER_ADDR:MASTER_PORT (connecting to the launcher's
    /// store, or — without one — rank 0 serving it), then build the process group for
    /// `device`. Waits at most `timeout` for the others; the error then says how many came.
    pub fn join(world: WorldInfo, device: &Device, timeout: Duration) -> Result<Self, EngineError> {
        let prefix = attempt_prefix(world.attempt);
        let (addr, port) = (world.master_addr.as_str(), world.master_port);
        let store = if world.agent_store || world.rank != 0 {
            Store::connect(addr, port, timeout, &prefix)
        } else {
            Store::serve(addr, port, timeout, &prefix)
        }
        .map_err(dist)?;
        let started = Instant::now();
        store.add("ranks_joined", 1).map_err(dist)?;
        loop {
            let joined = store.add("ranks_joined", 0).map_err(dist)?;
            if joined >= world.world_size as i64 {
                break;
            }
            if started.elapsed() >= timeout {
                return Err(EngineError::Distributed(format!(
                    "rendezvous at {addr}:{port} timed out after {:.0} s (--dist_timeout): {joined} of {} ranks arrived; check that every node was started with the same --nnode / --nproc_per_node and --master_addr {addr} --master_port {port}",
                    timeout.as_secs_f64(),
                    world.world_size
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let host = if is_loopback(addr) { "127.0.0.1" } else { "" };
        let group = ProcessGroup::new(device, &store, world.rank, world.world_size, timeout, host)
            .map_err(dist)?;
        tracing::info!(
            "rank {} of {} (local {} on node {}) joined through {addr}:{port}, {} process group",
            world.rank,
            world.world_size,
            world.local_rank,
            world.node_rank,
            group.backend()
        );
        Ok(DataParallel {
            world,
            group,
            reducer: None,
            buffers: Vec::new(),
            store,
        })
    }

    /// Whether this process writes checkpoints and reports.
    pub fn is_main(&self) -> bool {
        self.world.rank == 0
    }

    /// Give every rank rank 0's values of `tensors` (parameters and buffers, at start), and
    /// set up gradient averaging over `trainable`.
    pub(crate) fn start(
        &mut self,
        all_vars: &[(String, Tensor)],
        trainable: &[(String, Tensor)],
    ) -> Result<(), EngineError> {
        let tensors: Vec<&Tensor> = all_vars.iter().map(|(_, t)| t).collect();
        tch::no_grad(|| self.group.broadcast(&tensors, 0)).map_err(dist)?;
        self.buffers = all_vars
            .iter()
            .filter(|(_, t)| !t.requires_grad())
            .map(|(_, t)| t.shallow_clone())
            .collect();
        if self.reducer.is_none() {
            self.reducer = Some(
                Reducer::new(&self.group, trainable, Reducer::DEFAULT_CAP_BYTES).map_err(dist)?,
            );
        }
        Ok(())
    }

    /// Before the forward of a micro-batch whose backward averages gradients: rank 0's
    /// buffers to all, then the reducer's per-iteration set-up.
    pub(crate) fn before_forward(&mut self) -> Result<(), EngineError> {
        if !self.buffers.is_empty() {
            let buffers: Vec<&Tensor> = self.buffers.iter().collect();
            tch::no_grad(|| self.group.broadcast(&buffers, 0)).map_err(dist)?;
        }
        match self.reducer.as_mut() {
            Some(r) => r.before_forward().map_err(dist),
            None => Ok(()),
        }
    }

    /// Between that forward and its backward.
    pub(crate) fn before_backward(&mut self) -> Result<(), EngineError> {
        match self.reducer.as_mut() {
            Some(r) => r.before_backward().map_err(dist),
            None => Ok(()),
        }
    }

    /// Sum `t` over the ranks, in place.
    pub(crate) fn sum(&self, t: &Tensor) -> Result<(), EngineError> {
        self.group.all_reduce(&[t], ReduceOp::Sum).map_err(dist)
    }
}

fn is_loopback(addr: &str) -> bool {
    addr == "localhost"
        || addr
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A fingerprint of host tensors' exact bytes (names and values): equal on two ranks iff they
/// hold bit-identical parameters. Logged at the end of a data-parallel run.
pub fn fingerprint(named: &[(String, Tensor)]) -> String {
    use std::hash::Hasher;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (name, t) in named {
        h.write(name.as_bytes());
        let cpu = t.contiguous();
        let bytes = cpu.numel() * cpu.kind().elt_size_in_bytes();
        let mut buf = vec![0u8; bytes];
        cpu.copy_data_u8(&mut buf, cpu.numel());
        h.write(&buf);
    }
    format!("{:016x}", h.finish())
}
