"""One module per wire API the replay server speaks."""

from bosun.replay.protocols.anthropic import AnthropicMessages
from bosun.replay.protocols.base import WireAPI
from bosun.replay.protocols.gemini import Gemini
from bosun.replay.protocols.openai_chat import OpenAIChat
from bosun.replay.protocols.openai_responses import OpenAIResponses

__all__ = ["AnthropicMessages", "Gemini", "OpenAIChat", "OpenAIResponses", "WireAPI"]
