//! Shared by the emulator tests: where `make build` puts the SDAA emulator.

pub use modelzoo_testkit::emulator_home;

/// Point this test process at the emulator (every test of a file sets the same value).
#[allow(dead_code)]
pub fn use_emulator() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        std::env::set_var("SDAA_HOME", emulator_home());
        std::env::remove_var("TECO_HOME");
        std::env::remove_var("SDAA_TORCH_PLUGIN");
    });
}

/// A small conv net with BatchNorm (3 → 8 → 4 channels, 10 classes) the emulator tests train
/// on both devices.
#[allow(dead_code)]
pub fn conv_net(vs: &tch::nn::Path) -> tch::nn::SequentialT {
    let conv = tch::nn::ConvConfig {
        padding: 1,
        bias: false,
        ..Default::default()
    };
    tch::nn::seq_t()
        .add(tch::nn::conv2d(vs / "c1", 3, 8, 3, conv))
        .add(tch::nn::batch_norm2d(vs / "bn1", 8, Default::default()))
        .add_fn(|x| x.relu())
        .add(tch::nn::conv2d(vs / "c2", 8, 4, 3, conv))
        .add(tch::nn::batch_norm2d(vs / "bn2", 4, Default::default()))
        .add_fn(|x| x.relu().adaptive_avg_pool2d([2, 2]).flatten(1, -1))
        .add(tch::nn::linear(vs / "fc", 16, 10, Default::default()))
}
