"""The built-in demo repositories used when fakehub runs without --repos."""

SAFETENSORS = {"path": "model.safetensors", "size": 3 * 1024 * 1024 + 4321, "seed": 4242}

CONFIG = '{"model_type": "llama", "hidden_size": 64}\n'
CONFIG_V2 = '{"model_type": "llama", "hidden_size": 64, "max_position_embeddings": 4096}\n'

CARD = {"license": "mit", "tags": ["text-generation", "tiny"], "pipeline_tag": "text-generation",
        "library_name": "transformers"}

README = """---
license: mit
tags:
- text-generation
- tiny
pipeline_tag: text-generation
library_name: transformers
---
# tiny-llm

A tiny deterministic demo model served by fakehub.
"""


def spec():
    return {
        "tokens": {
            "hf_demo_approved": {"approved": ["demo-org/gated-model"]},
            "hf_demo_plain": {},
        },
        "repos": [
            {"hub": "hf", "type": "model", "id": "demo-org/tiny-llm", "card": CARD,
             "renamed_from": ["demo-org/old-tiny-llm"],
             "branches": {"main": "c1"}, "tags": {"v1.0": "c1"}, "prs": {"1": "c2"},
             "commits": [
                 {"key": "c1", "title": "initial commit", "files": [
                     {"path": "config.json", "content": CONFIG},
                     {"path": "tokenizer_config.json", "content": '{"model_max_length": 512}\n'},
                     {"path": "README.md", "content": README},
                     SAFETENSORS]},
                 {"key": "c2", "parent": "c1", "title": "bigger context", "files": [
                     {"path": "config.json", "content": CONFIG_V2}]},
             ]},
            {"hub": "hf", "type": "dataset", "id": "demo-org/tiny-dataset",
             "card": {"license": "cc-by-4.0", "tags": ["tabular"]},
             "generate": {"count": 50, "size": 128, "prefix": "data/gen/part-", "suffix": ".jsonl",
                          "seed": 9000},
             "files": [
                 {"path": "README.md", "content": "---\nlicense: cc-by-4.0\n---\n# tiny-dataset\n"},
                 {"path": "data/train.csv", "content": "id,text\n1,hello\n2,world\n"},
                 {"path": "data/test.csv", "content": "id,text\n3,foo\n"},
                 {"path": "data/train.parquet", "size": 200000, "seed": 77}]},
            {"hub": "hf", "type": "model", "id": "demo-org/gated-model", "gated": "manual",
             "card": {"license": "other", "tags": ["gated"]},
             "files": [
                 {"path": "config.json", "content": '{"model_type": "bert"}\n'},
                 {"path": "model.safetensors", "size": 65536, "seed": 7}]},
            {"hub": "ms", "type": "model", "id": "demo-org/tiny-llm", "card": CARD,
             "branches": {"master": "c1"}, "tags": {"v1.0": "c1"},
             "files": [
                 {"path": "configuration.json",
                  "content": '{"framework": "pytorch", "task": "text-generation"}\n'},
                 {"path": "config.json", "content": CONFIG},
                 {"path": "README.md", "content": README},
                 SAFETENSORS]},
            {"hub": "ms", "type": "dataset", "id": "demo-org/ms-dataset",
             "generate": {"count": 20, "size": 256, "prefix": "data/shard-", "suffix": ".jsonl",
                          "seed": 5000},
             "files": [
                 {"path": "README.md", "content": "# ms-dataset\n"},
                 {"path": "train.csv", "content": "id,text\n1,a\n2,b\n"}]},
        ],
    }
