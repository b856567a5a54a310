//! What mixed precision does with the Paddle ops of `Engine.mix_precision`'s op lists.

use model_config::fleetx::AmpOp;

/// What mixed precision does with the Paddle ops FleetX configs put in
/// `Engine.mix_precision.custom_black_list` / `custom_white_list`, in run_gpt's and run_llama's
/// networks (libtorch autocast; weights, gradients and optimizer state stay fp32). An op whose
/// list asks for what we do is applied by construction; see
/// [`MixPrecision::check_lists`](model_config::fleetx::MixPrecision::check_lists).
pub const AMP_OPS: &[AmpOp] = &[
    AmpOp {
        name: "reduce_sum",
        low_precision: false,
        what: "every sum runs in fp32: the loss (its logits are cast to fp32 first), LayerNorm / RMSNorm statistics (on the fp32 residual stream, RMSNorm explicitly in fp32) and the gradient norm (fp32 gradients)",
    },
    AmpOp {
        name: "reduce_mean",
        low_precision: false,
        what: "every mean runs in fp32: the loss over the tokens and RMSNorm's mean square",
    },
    AmpOp {
        name: "elementwise_div",
        low_precision: false,
        what: "every division runs in fp32: the loss normalised by the token count, the LayerNorm / RMSNorm normalisation; attention scaling is a multiplication inside scaled_dot_product_attention",
    },
    AmpOp {
        name: "c_softmax_with_cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "softmax_with_cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "cross_entropy",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "cross_entropy2",
        low_precision: false,
        what: "the loss is computed in fp32 (the logits are cast to fp32 before the cross entropy)",
    },
    AmpOp {
        name: "layer_norm",
        low_precision: false,
        what: "LayerNorm / RMSNorm run in fp32 (on the fp32 residual stream; RMSNorm normalises in fp32 explicitly)",
    },
    AmpOp {
        name: "softmax",
        low_precision: true,
        what: "the attention softmax runs fused inside scaled_dot_product_attention on the AMP dtype's inputs (accumulating in fp32); it cannot be taken out to fp32",
    },
    AmpOp {
        name: "matmul",
        low_precision: true,
        what: "the linear layers, attention and output projection run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "matmul_v2",
        low_precision: true,
        what: "the linear layers, attention and output projection run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "mul",
        low_precision: true,
        what: "the linear layers run in the AMP dtype (libtorch autocast's matmul list)",
    },
    AmpOp {
        name: "fused_gemm_epilogue",
        low_precision: true,
        what: "the linear layers (one GEMM with its bias) run in the AMP dtype",
    },
    AmpOp {
        name: "lookup_table",
        low_precision: false,
        what: "the embedding lookup gathers the fp32 weight rows (libtorch autocast leaves embedding in the weight's dtype, Paddle's default too); the first matmul casts them to the AMP dtype",
    },
    AmpOp {
        name: "lookup_table_v2",
        low_precision: false,
        what: "the embedding lookup gathers the fp32 weight rows (libtorch autocast leaves embedding in the weight's dtype, Paddle's default too); the first matmul casts them to the AMP dtype",
    },
];
