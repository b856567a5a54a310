//! c10d through the shim on the CPU: TCPStore rendezvous, ProcessGroupGloo collectives and
//! DDP's Reducer, across real processes (this test binary re-runs itself as the ranks).

use std::process::Command;
use std::time::Duration;

use device_sdaa::dist::{DistError, ProcessGroup, ReduceOp, Reducer, Store};
use device_sdaa::Device;
use modelzoo_testkit::free_port;
use tch::{nn, nn::Module, Kind, Tensor};

const TIMEOUT: Duration = Duration::from_secs(60);

/// Run `test` of this binary as `world` ranks with RANK/WORLD_SIZE/MASTER_PORT set; returns
/// each rank's stdout.
fn spawn_ranks(test: &str, world: usize) -> Vec<String> {
    let port = free_port().to_string();
    let exe = std::env::current_exe().expect("test binary path");
    let children: Vec<_> = (0..world)
        .map(|rank| {
            Command::new(&exe)
                .args([test, "--exact", "--nocapture", "--test-threads=1"])
                .env("MZ_TEST_RANK", rank.to_string())
                .env("MZ_TEST_WORLD", world.to_string())
                .env("MZ_TEST_PORT", &port)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn rank")
        })
        .collect();
    children
        .into_iter()
        .enumerate()
        .map(|(rank, c)| {
            let out = c.wait_with_output().expect("rank output");
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(out.status.success(), "rank {rank} failed: {text}");
            text
        })
        .collect()
}

/// (rank, world, store, group) when running as a rank, None in the parent test.
fn as_rank() -> Option<(usize, usize, Store, ProcessGroup)> {
    let rank: usize = std::env::var("MZ_TEST_RANK").ok()?.parse().ok()?;
    let world: usize = std::env::var("MZ_TEST_WORLD").ok()?.parse().ok()?;
    let port: u16 = std::env::var("MZ_TEST_PORT").ok()?.parse().ok()?;
    let store = if rank == 0 {
        Store::serve("127.0.0.1", port, TIMEOUT, "t/")
    } else {
        Store::connect("127.0.0.1", port, TIMEOUT, "t/")
    }
    .expect("store");
    let group = ProcessGroup::new(&Device::cpu(), &store, rank, world, TIMEOUT, "127.0.0.1")
        .expect("gloo group");
    Some((rank, world, store, group))
}

fn value_line(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find_map(|l| l.split_once(&format!("{key}=")).map(|(_, v)| v))
        .unwrap_or_else(|| panic!("no {key}= line in {stdout}"))
        .to_string()
}

#[test]
fn store_allreduce_and_broadcast_across_processes() {
    let Some((rank, world, store, group)) = as_rank() else {
        let outs = spawn_ranks("store_allreduce_and_broadcast_across_processes", 3);
        for out in &outs {
            assert_eq!(
                value_line(out, "sum"),
                "[6.0, 60.0]",
                "0+1+2 + 3 ranks of 1s"
            );
            assert_eq!(value_line(out, "bcast"), "[7.0, 7.0, 7.0, 7.0]");
            assert_eq!(value_line(out, "arrived"), "3");
        }
        return;
    };
    assert_eq!(group.backend(), "gloo");
    let t = Tensor::from_slice(&[rank as f32 + 1.0, 20.0]);
    group.all_reduce(&[&t], ReduceOp::Sum).unwrap();
    println!("sum={:?}", Vec::<f32>::try_from(&t).unwrap());
    let b = Tensor::full([4], rank as f64 + 7.0, (Kind::Float, tch::Device::Cpu));
    group.broadcast(&[&b], 0).unwrap();
    println!("bcast={:?}", Vec::<f32>::try_from(&b).unwrap());
    store.add("arrived", 1).unwrap();
    while store.add("arrived", 0).unwrap() < world as i64 {
        std::thread::sleep(Duration::from_millis(10));
    }
    println!("arrived={}", store.add("arrived", 0).unwrap());
    let z = Tensor::zeros([1], (Kind::Float, tch::Device::Cpu));
    group.all_reduce(&[&z], ReduceOp::Sum).unwrap(); // nobody leaves before the last read
}

/// Two ranks, each a different half of one batch: with the Reducer the averaged gradients
/// equal the full-batch gradient of one process, and the two ranks agree bit for bit.
#[test]
fn reducer_averages_gradients_in_backward() {
    let Some((rank, world, _store, group)) = as_rank() else {
        let outs = spawn_ranks("reducer_averages_gradients_in_backward", 2);
        assert_eq!(
            value_line(&outs[0], "grads"),
            value_line(&outs[1], "grads"),
            "ranks hold the same averaged gradients"
        );
        assert_full_batch_grads(&outs[0]);
        return;
    };
    ddp_steps(rank, world, &group, 64, |params| {
        for (_, p) in params {
            let mut g = p.grad();
            if g.defined() {
                let _ = g.zero_();
            }
        }
    });
}

/// The reducer's gradients are views of its bucket (`gradient_as_bucket_view`): after a
/// backward, the parameters' gradients lie end to end in one buffer (separate allocations
/// never do: each has its allocator header), and they still hold the full batch's gradients
/// when dropped between steps as the engine's `zero_grad` does.
#[test]
fn reducer_gradients_are_views_of_its_bucket() {
    let Some((rank, world, _store, group)) = as_rank() else {
        for out in spawn_ranks("reducer_gradients_are_views_of_its_bucket", 2) {
            assert_eq!(value_line(&out, "end_to_end"), "true", "{out}");
            assert_full_batch_grads(&out);
        }
        return;
    };
    let params = ddp_steps(rank, world, &group, Reducer::DEFAULT_CAP_BYTES, |params| {
        let tensors: Vec<&Tensor> = params.iter().map(|(_, p)| p).collect();
        device_sdaa::optim::set_grads_to_none(&tensors).unwrap();
    });
    let mut spans: Vec<(usize, usize)> = params
        .iter()
        .map(|(_, p)| {
            let g = p.grad();
            (
                g.data_ptr() as usize,
                g.numel() * g.kind().elt_size_in_bytes(),
            )
        })
        .collect();
    spans.sort();
    let end_to_end = spans.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0);
    println!("end_to_end={end_to_end}");
}

/// As a rank: three data-parallel steps of [`model`] on this rank's half of [`batch`] through a
/// reducer with `cap_bytes` buckets, `clear` run on the parameters before each; prints the
/// last step's gradients (`grads=`) and returns the parameters, in name order.
fn ddp_steps(
    rank: usize,
    world: usize,
    group: &ProcessGroup,
    cap_bytes: i64,
    clear: impl Fn(&[(String, Tensor)]),
) -> Vec<(String, Tensor)> {
    let (vs, net) = model();
    let mut params: Vec<_> = vs.variables().into_iter().collect();
    params.sort_by(|a, b| a.0.cmp(&b.0));
    let mut reducer = Reducer::new(group, &params, cap_bytes).unwrap();
    let (x, y) = batch();
    let half = x.size()[0] / world as i64;
    for _ in 0..3 {
        clear(&params);
        reducer.before_forward().unwrap();
        let xs = x.narrow(0, rank as i64 * half, half);
        let ys = y.narrow(0, rank as i64 * half, half);
        let loss = (net.forward(&xs) - ys).square().mean(Kind::Float);
        reducer.before_backward().unwrap();
        loss.backward();
    }
    let flat: Vec<String> = params
        .iter()
        .flat_map(|(_, p)| Vec::<f32>::try_from(p.grad().flatten(0, -1)).unwrap())
        .map(|v| v.to_string())
        .collect();
    println!("grads={}", flat.join(","));
    params
}

/// A rank's `grads=` line equals one process's gradients over the whole batch.
fn assert_full_batch_grads(out: &str) {
    let full = full_batch_grads();
    let got: Vec<f64> = value_line(out, "grads")
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    assert_eq!(got.len(), full.len());
    for (a, b) in got.iter().zip(&full) {
        assert!(
            (a - b).abs() <= 1e-6 * b.abs().max(1.0),
            "DDP {a} vs full batch {b}"
        );
    }
}

fn model() -> (nn::VarStore, nn::Sequential) {
    tch::manual_seed(3);
    let vs = nn::VarStore::new(tch::Device::Cpu);
    let net = nn::seq()
        .add(nn::linear(vs.root() / "a", 5, 16, Default::default()))
        .add_fn(|x| x.tanh())
        .add(nn::linear(vs.root() / "b", 16, 3, Default::default()));
    (vs, net)
}

fn batch() -> (Tensor, Tensor) {
    let x = Tensor::arange(8 * 5, (Kind::Float, tch::Device::Cpu)).view([8, 5]) / 40.0;
    let y = Tensor::arange(8 * 3, (Kind::Float, tch::Device::Cpu))
        .view([8, 3])
        .cos();
    (x, y)
}

fn full_batch_grads() -> Vec<f64> {
    let (vs, net) = model();
    let mut v: Vec<_> = vs.variables().into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    let (x, y) = batch();
    let loss = (net.forward(&x) - y).square().mean(Kind::Float);
    loss.backward();
    v.iter()
        .flat_map(|(_, p)| Vec::<f32>::try_from(p.grad().flatten(0, -1)).unwrap())
        .map(f64::from)
        .collect()
}

#[test]
fn serving_on_a_taken_port_is_a_clear_error() {
    if std::env::var("MZ_TEST_RANK").is_ok() {
        return;
    }
    let listener = std::net::TcpListener::bind("0.0.0.0:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    match Store::serve("127.0.0.1", port, Duration::from_secs(2), "") {
        Err(e @ DistError::PortInUse { .. }) => {
            assert!(e.to_string().contains(&port.to_string()), "{e}");
            assert!(e.to_string().contains("--master_port"), "{e}");
        }
        Err(e) => panic!("expected PortInUse, got {e}"),
        Ok(_) => panic!("served on a taken port"),
    }
}

#[test]
fn connecting_to_nobody_times_out_with_the_address() {
    if std::env::var("MZ_TEST_RANK").is_ok() {
        return;
    }
    let port = free_port();
    let t = std::time::Instant::now();
    let err = Store::connect("127.0.0.1", port, Duration::from_secs(2), "")
        .err()
        .expect("nobody serves that port");
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t.elapsed()
    );
    let text = err.to_string();
    assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
    assert!(text.contains("not reachable"), "{text}");
}

/// SyncBatchNorm on two ranks, each with half a batch, equals batch norm of the whole batch in
/// one process: outputs, input gradients, running statistics; weight/bias gradients sum to it.
#[test]
fn sync_batch_norm_equals_whole_batch_norm() {
    let Some((rank, world, _store, group)) = as_rank() else {
        let outs = spawn_ranks("sync_batch_norm_equals_whole_batch_norm", 2);
        let (y, dx, rm, rv, dw) = whole_batch_norm();
        let field = |key: &str| -> Vec<Vec<f64>> {
            outs.iter()
                .map(|o| {
                    value_line(o, key)
                        .split(',')
                        .map(|v| v.parse().unwrap())
                        .collect()
                })
                .collect()
        };
        let close = |a: &[f64], b: &[f64], what: &str| {
            assert_eq!(a.len(), b.len(), "{what}");
            for (x, y) in a.iter().zip(b) {
                assert!(
                    (x - y).abs() <= 1e-5 * y.abs().max(1.0),
                    "{what}: {x} vs {y}"
                );
            }
        };
        close(&field("y").concat(), &y, "outputs");
        close(&field("dx").concat(), &dx, "input gradients");
        for r in 0..2 {
            close(&field("rm")[r], &rm, "running mean");
            close(&field("rv")[r], &rv, "running var");
        }
        let dws = field("dw");
        let summed: Vec<f64> = dws[0].iter().zip(&dws[1]).map(|(a, b)| a + b).collect();
        close(&summed, &dw, "weight gradient (summed over ranks)");
        return;
    };
    let (x, c, w, b, rm, rv) = bn_inputs();
    let half = x.size()[0] / world as i64;
    let xs = x
        .narrow(0, rank as i64 * half, half)
        .detach()
        .set_requires_grad(true);
    let cs = c.narrow(0, rank as i64 * half, half);
    let y = group
        .sync_batch_norm(&xs, &w, &b, &rm, &rv, 0.1, 1e-5)
        .unwrap();
    (&y * &cs).sum(Kind::Float).backward();
    let show = |t: &Tensor| {
        Vec::<f32>::try_from(t.flatten(0, -1))
            .unwrap()
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    println!("y={}", show(&y.detach()));
    println!("dx={}", show(&xs.grad()));
    println!("rm={}", show(&rm));
    println!("rv={}", show(&rv));
    println!("dw={}", show(&w.grad()));
}

fn bn_inputs() -> (Tensor, Tensor, Tensor, Tensor, Tensor, Tensor) {
    let opts = (Kind::Float, tch::Device::Cpu);
    let x = (Tensor::arange(6 * 3 * 2 * 2, opts).view([6, 3, 2, 2]) * 0.37).sin() * 3.0 + 1.0;
    let c = (Tensor::arange(6 * 3 * 2 * 2, opts).view([6, 3, 2, 2]) * 0.11).cos();
    let w = Tensor::from_slice(&[1.5f32, 0.5, -1.0]).set_requires_grad(true);
    let b = Tensor::from_slice(&[0.1f32, -0.2, 0.3]).set_requires_grad(true);
    (
        x,
        c,
        w,
        b,
        Tensor::zeros([3], opts),
        Tensor::ones([3], opts),
    )
}

/// (outputs, input gradients, running mean, running var, weight gradient), flattened.
type BnResults = (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>);

fn whole_batch_norm() -> BnResults {
    let (x, c, w, b, rm, rv) = bn_inputs();
    let x = x.set_requires_grad(true);
    let y = x.batch_norm(
        Some(&w),
        Some(&b),
        Some(&rm),
        Some(&rv),
        true,
        0.1,
        1e-5,
        false,
    );
    (&y * &c).sum(Kind::Float).backward();
    let v = |t: &Tensor| -> Vec<f64> {
        Vec::<f32>::try_from(t.flatten(0, -1))
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect()
    };
    (v(&y.detach()), v(&x.grad()), v(&rm), v(&rv), v(&w.grad()))
}
