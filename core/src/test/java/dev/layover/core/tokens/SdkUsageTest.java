package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import com.anthropic.models.messages.MessageCreateParams;
import com.anthropic.models.messages.Model;
import com.google.genai.types.GenerateContentResponse;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.bedrockruntime.model.ConverseStreamOutput;
import software.amazon.awssdk.services.bedrockruntime.model.MessageStopEvent;

/** Objects {@link TokenUsage#of(Object)} does not know, or that carry no usage, give empty. */
@PureTest
class SdkUsageTest {

    @Test
    void foreignObjectsAndNullGiveEmpty() {
        assertEquals(Optional.empty(), TokenUsage.of(null));
        assertEquals(Optional.empty(), TokenUsage.of("{\"usage\":{\"prompt_tokens\":3}}"));
        assertEquals(Optional.empty(), TokenUsage.of(new Object()));
        assertEquals(Optional.empty(), TokenUsage.of(42L));
    }

    @Test
    void aTokenUsageIsItsOwnUsage() {
        TokenUsage u = TokenUsage.of(Provider.GEMINI, 3, 4);
        assertSame(u, TokenUsage.of(u).orElseThrow());
    }

    @Test
    void sdkObjectsThatAreNotResponsesGiveEmpty() {
        assertEquals(Optional.empty(), TokenUsage.of(
                ChatCompletionCreateParams.builder().model("gpt-4o").addUserMessage("hi").build()));
        assertEquals(Optional.empty(), TokenUsage.of(
                MessageCreateParams.builder().model(Model.CLAUDE_HAIKU_4_5).maxTokens(5).addUserMessage("hi").build()));
        assertEquals(Optional.empty(), TokenUsage.of(GenerateContentResponse.builder().build()));
        assertEquals(Optional.empty(), TokenUsage.of(MessageStopEvent.builder().stopReason("end_turn").build()));
        assertEquals(Optional.empty(), TokenUsage.of(ConverseStreamOutput.UNKNOWN));
        assertEquals(Optional.empty(), TokenUsage.of(
                software.amazon.awssdk.services.bedrockruntime.model.TokenUsage.builder().build()));
    }

    @Test
    void sdkObjectsBuiltWithCountsTheSdkRefusesToGiveGiveEmpty() {
        // built by hand with a negative count: TokenUsage refuses it, so the reader gives empty
        assertEquals(Optional.empty(), TokenUsage.of(com.openai.models.completions.CompletionUsage.builder()
                .promptTokens(5).completionTokens(-3).totalTokens(2).build()));
        assertEquals(Optional.empty(), TokenUsage.of(
                software.amazon.awssdk.services.bedrockruntime.model.TokenUsage.builder().inputTokens(-1)
                        .outputTokens(2).totalTokens(1).build()));
    }
}
