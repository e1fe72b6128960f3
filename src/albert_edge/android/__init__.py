"""The Python side of the Android core: app assets and the golden files the Java tests replay
(`goldens` for tokenization and logits, `ner` and `qa` for entities and spans, `tables` for the
Unicode tables the Java tokenizer compiles in, `golden_inputs` for the shared inputs).
"""
