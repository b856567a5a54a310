#!/usr/bin/env python3
"""Generates tokenizer.json, run_bert's built-in tokenizer: a lowercase WordPiece vocabulary
(Hugging Face `tokenizers`' BertWordPieceTokenizer, the tokenizer of bert-base-uncased) trained
on the built-in corpus (modelzoo/text/data/corpus.txt), with BERT's special tokens first so
[PAD] is id 0 as in bert-base-uncased. Reproducible:
`.venv/bin/python modelzoo/bert/data/gen_tokenizer.py` (from the repository root)."""
import os

from tokenizers import BertWordPieceTokenizer

here = os.path.dirname(os.path.abspath(__file__))
corpus = os.path.join(here, "..", "..", "text", "data", "corpus.txt")
tok = BertWordPieceTokenizer(lowercase=True)
tok.train(
    [corpus],
    vocab_size=512,
    min_frequency=1,
    special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
    show_progress=False,
)
tok.save(os.path.join(here, "tokenizer.json"), pretty=False)
