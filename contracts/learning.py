"""What the learner tells the selectors about learning from use."""

from pydantic import Field

from toolsel.contracts.common import Message


class UsageUpdated(Message):
    """Usage vectors changed in a committed batch: a selector fetches the rows with a version above the
    highest it holds, never the whole catalog."""

    version: int = Field(ge=1)
    """The version the batch stamped on the vectors it wrote (``tool_usage_vectors.version``)."""
    tools: int = Field(ge=0)
    """How many (tool, scope) vectors it wrote."""
