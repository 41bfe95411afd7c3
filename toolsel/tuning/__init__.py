"""Fine-tuning the embedding model on query → tool pairs (in-batch negatives), its ONNX export and its model card.

``pairs`` and ``card`` need nothing beyond the base install (the evaluation reads a card); ``train`` and ``export``
need torch and transformers, the optional ``tune`` extra (``pip install -e ".[tune]"``)."""
