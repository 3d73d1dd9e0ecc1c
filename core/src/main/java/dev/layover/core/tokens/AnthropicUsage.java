package dev.layover.core.tokens;

import com.anthropic.core.http.HttpResponseFor;
import com.anthropic.models.beta.messages.BetaMessage;
import com.anthropic.models.beta.messages.BetaMessageDeltaUsage;
import com.anthropic.models.beta.messages.BetaRawMessageDeltaEvent;
import com.anthropic.models.beta.messages.BetaRawMessageStartEvent;
import com.anthropic.models.beta.messages.BetaRawMessageStreamEvent;
import com.anthropic.models.beta.messages.BetaUsage;
import com.anthropic.models.messages.Message;
import com.anthropic.models.messages.MessageDeltaUsage;
import com.anthropic.models.messages.RawMessageDeltaEvent;
import com.anthropic.models.messages.RawMessageStartEvent;
import com.anthropic.models.messages.RawMessageStreamEvent;
import com.anthropic.models.messages.Usage;
import dev.layover.core.provider.Provider;
import java.util.Optional;

/**
 * Reads usage from anthropic-java's model types (also those of its beta API). Only loaded after
 * {@link SdkUsage} has seen a {@code com.anthropic} object.
 *
 * <p>{@code input_tokens} excludes cache reads and writes. A stream's {@code message_start}
 * carries the input counts and {@code message_delta} the cumulative output count (and, in newer
 * API versions, the input counts again); a {@code MessageDeltaUsage} without input counts gives
 * input 0, so merge a stream's events with {@link StreamUsage}.
 */
final class AnthropicUsage {

    private AnthropicUsage() {}

    static Optional<TokenUsage> read(Object o) {
        if (o instanceof Message m) {
            return Optional.of(of(m.usage()));
        }
        if (o instanceof Usage u) {
            return Optional.of(of(u));
        }
        if (o instanceof MessageDeltaUsage d) {
            return Optional.of(of(d));
        }
        if (o instanceof RawMessageStartEvent e) {
            return read(e.message());
        }
        if (o instanceof RawMessageDeltaEvent e) {
            return Optional.of(of(e.usage()));
        }
        if (o instanceof RawMessageStreamEvent e) {
            return e.messageStart().map(AnthropicUsage::read)
                    .or(() -> e.messageDelta().map(AnthropicUsage::read))
                    .orElse(Optional.empty());
        }
        if (o instanceof BetaMessage m) {
            return Optional.of(of(m.usage()));
        }
        if (o instanceof BetaUsage u) {
            return Optional.of(of(u));
        }
        if (o instanceof BetaMessageDeltaUsage d) {
            return Optional.of(of(d));
        }
        if (o instanceof BetaRawMessageStartEvent e) {
            return read(e.message());
        }
        if (o instanceof BetaRawMessageDeltaEvent e) {
            return Optional.of(of(e.usage()));
        }
        if (o instanceof BetaRawMessageStreamEvent e) {
            return e.messageStart().map(AnthropicUsage::read)
                    .or(() -> e.messageDelta().map(AnthropicUsage::read))
                    .orElse(Optional.empty());
        }
        if (o instanceof HttpResponseFor<?> r) {
            return SdkUsage.read(r.parse());
        }
        return Optional.empty();
    }

    private static TokenUsage of(Usage u) {
        return usage(u.inputTokens(), u.outputTokens(), u.cacheReadInputTokens(), u.cacheCreationInputTokens());
    }

    private static TokenUsage of(MessageDeltaUsage d) {
        return usage(d.inputTokens().orElse(0L), d.outputTokens(), d.cacheReadInputTokens(),
                d.cacheCreationInputTokens());
    }

    private static TokenUsage of(BetaUsage u) {
        return usage(u.inputTokens(), u.outputTokens(), u.cacheReadInputTokens(), u.cacheCreationInputTokens());
    }

    private static TokenUsage of(BetaMessageDeltaUsage d) {
        return usage(d.inputTokens().orElse(0L), d.outputTokens(), d.cacheReadInputTokens(),
                d.cacheCreationInputTokens());
    }

    private static TokenUsage usage(long input, long output, Optional<Long> cacheRead, Optional<Long> cacheWrite) {
        return new TokenUsage(Provider.ANTHROPIC, input, output, cacheRead.orElse(0L), cacheWrite.orElse(0L));
    }
}
