"""Reference numbers for tests/reference.rs and tests/parameters.rs: Hugging Face's BERT
(transformers, the workspace .venv) built from a BertConfig — no hub download — with a fixed
seed.

  python hf_reference.py logits OUT_DIR CONFIG_JSON
      For BertForPreTraining, BertForSequenceClassification (3 labels) and
      BertForQuestionAnswering, each with every parameter perturbed (so no term of the forward
      is a constant) writes OUT_DIR/<class>.safetensors (its state dict, the tied decoder left
      out as save_pretrained does) and OUT_DIR/<class>.reference.safetensors: input_ids,
      token_type_ids, attention_mask [2, 24] (the second row padded after 17 tokens) and the
      fp32 logits of the eval-mode forward. Also OUT_DIR/legacy.safetensors: the
      BertForPreTraining encoder as a bare BertModel state dict with the old LayerNorm
      gamma / beta names, and its last_hidden_state in the pretraining reference file.

  python hf_reference.py count CONFIG_JSON
      Prints {"BertForPreTraining": n, ...}: sum(p.numel() for p in model.parameters()) of
      each class (3 labels for classification), built on the meta device.
"""

import json
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import (
    BertConfig,
    BertForPreTraining,
    BertForQuestionAnswering,
    BertForSequenceClassification,
)

CLASSES = [BertForPreTraining, BertForSequenceClassification, BertForQuestionAnswering]


def config_for(cls, kwargs):
    """The classifier has 3 labels; question answering the 2 outputs (start, end) it needs."""
    labels = 3 if cls is BertForSequenceClassification else 2
    return BertConfig(num_labels=labels, **kwargs)


def count(kwargs):
    out = {}
    with torch.device("meta"):
        for cls in CLASSES:
            out[cls.__name__] = sum(p.numel() for p in cls(config_for(cls, kwargs)).parameters())
    print(json.dumps(out))


def logits(out_dir, kwargs):
    config = BertConfig(**kwargs)
    gen = torch.Generator().manual_seed(7)
    ids = torch.randint(0, config.vocab_size, (2, 24), generator=gen)
    types = torch.zeros(2, 24, dtype=torch.int64)
    types[:, 10:] = 1
    mask = torch.ones(2, 24, dtype=torch.int64)
    mask[1, 17:] = 0
    ids[1, 17:] = config.pad_token_id
    types[1, 17:] = 0
    inputs = {"input_ids": ids, "token_type_ids": types, "attention_mask": mask}
    for i, cls in enumerate(CLASSES):
        torch.manual_seed(1234 + i)
        model = cls(config_for(cls, kwargs)).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("LayerNorm.weight"):
                    p.copy_(1.0 + 0.2 * torch.randn_like(p))
                else:
                    p.copy_(0.1 * torch.randn_like(p))
        state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
        for tied in ["cls.predictions.decoder.weight", "cls.predictions.decoder.bias"]:
            state.pop(tied, None)
        save_file(state, os.path.join(out_dir, f"{cls.__name__}.safetensors"))
        ref = dict(inputs)
        with torch.no_grad():
            out = model(**inputs)
            if cls is BertForPreTraining:
                ref["prediction_logits"] = out.prediction_logits.float().contiguous()
                ref["seq_relationship_logits"] = out.seq_relationship_logits.float().contiguous()
                ref["last_hidden_state"] = model.bert(**inputs).last_hidden_state.contiguous()
                legacy = {}
                for k, v in model.bert.state_dict().items():
                    k = k.replace("LayerNorm.weight", "LayerNorm.gamma").replace(
                        "LayerNorm.bias", "LayerNorm.beta"
                    )
                    legacy[k] = v.detach().clone().contiguous()
                save_file(legacy, os.path.join(out_dir, "legacy.safetensors"))
            elif cls is BertForSequenceClassification:
                ref["logits"] = out.logits.float().contiguous()
            else:
                ref["start_logits"] = out.start_logits.float().contiguous()
                ref["end_logits"] = out.end_logits.float().contiguous()
        save_file(ref, os.path.join(out_dir, f"{cls.__name__}.reference.safetensors"))


def main():
    if sys.argv[1] == "count":
        count(json.loads(sys.argv[2]))
    else:
        logits(sys.argv[2], json.loads(sys.argv[3]))


if __name__ == "__main__":
    main()
