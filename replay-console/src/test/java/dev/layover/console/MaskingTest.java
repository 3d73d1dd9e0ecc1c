package dev.layover.console;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.testing.PureTest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** What looks sensitive, and what is left alone. */
@PureTest
class MaskingTest {

    private static final ObjectMapper JSON = new ObjectMapper();

    @Test
    void fieldNamesThatLookSensitiveAreRecognisedWhateverTheirSpelling() {
        for (String k : List.of("token", "access_token", "refreshToken", "API_KEY", "apiKey", "api-key", "x-api-key",
                "apikey", "Authorization", "password", "db_password", "passwd", "client_secret", "secretKey",
                "credentials", "private_key", "aws_access_key_id", "Cookie", "auth", "session_token")) {
            assertTrue(Masking.isSensitiveKey(k), k);
        }
        for (String k : List.of("max_tokens", "maxTokens", "prompt_tokens", "tokens", "token_count", "author",
                "tokensPerMinute", "inputTokensPerMinute", "output_tokens_per_minute",
                "name", "model", "keywords", "passage", "secretary_name".substring(0, 4))) {
            assertFalse(Masking.isSensitiveKey(k), k);
        }
    }

    @Test
    void secretsInTextAreMaskedAndTheRestOfTheMessageIsKept() {
        assertEquals("401: invalid key sk-[masked] (check your key)",
                Masking.maskText("401: invalid key sk-abcdef1234567890 (check your key)"));
        assertEquals("key sk-ant-[masked]", Masking.maskText("key sk-ant-api03-AbCdEf123456"));
        assertEquals("Authorization: Bearer [masked]", Masking.maskText("Authorization: Bearer abc.def-123_XYZ"));
        assertEquals("api_key=[masked]&model=gpt", Masking.maskText("api_key=hunter2secret&model=gpt"));
        assertEquals("refused api_key=[masked] here", Masking.maskText("refused api_key=sk-proj-Abc123DEF456ghi here"),
                "a named sk- key is masked once, whole");
        assertEquals("{\"password\": \"[masked]\"}", Masking.maskText("{\"password\": \"p4ss\"}"));
        assertEquals("Google said: key AIza[masked] is invalid",
                Masking.maskText("Google said: key AIzaSyA1234567890abcdefghijklmnop is invalid"));
        assertEquals("id AKIA[masked]", Masking.maskText("id AKIAIOSFODNN7EXAMPLE"));
        assertEquals("jwt [masked] end", Masking.maskText("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdEFGH end"));
        assertEquals("rate limited: max_tokens=4096 exceeds the tokens per min limit",
                Masking.maskText("rate limited: max_tokens=4096 exceeds the tokens per min limit"));
        assertEquals("<script>window.__xss=1</script>", Masking.maskText("<script>window.__xss=1</script>"));
    }

    @Test
    void maskingJsonHidesSensitiveValuesAtAnyDepthAndKeepsTheShape() throws Exception {
        JsonNode n = JSON.readTree("{\"a\":{\"b\":[{\"token\":\"t\"},{\"x\":\"Bearer abcdefgh\"}]},\"password\":null,"
                + "\"credentials\":{\"user\":\"u\",\"pw\":\"p\"},\"max_tokens\":5}");
        JsonNode keys = Masking.maskKeys(n);
        assertEquals("[masked]", keys.at("/a/b/0/token").asText());
        assertEquals("Bearer abcdefgh", keys.at("/a/b/1/x").asText(), "args text is data: kept");
        assertTrue(keys.get("password").isNull(), "nothing to hide in null");
        assertEquals("[masked]", keys.get("credentials").asText());
        assertEquals(5, keys.get("max_tokens").asInt());
        assertEquals("Bearer [masked]", Masking.maskAll(n).at("/a/b/1/x").asText());
        assertEquals("t", n.at("/a/b/0/token").asText(), "the input is not changed");
        assertTrue(Masking.hasSensitive(n));
        assertFalse(Masking.hasSensitive(JSON.readTree("{\"max_tokens\":1,\"password\":null}")));
    }

    @Test
    void maskedValuesLeftInEditedArgsGetTheirStoredValuesBack() throws Exception {
        JsonNode stored = JSON.readTree("{\"prompt\":\"a\",\"apiKey\":\"real\",\"list\":[{\"secret\":\"s1\"}]}");
        JsonNode edited = JSON.readTree("{\"prompt\":\"b\",\"apiKey\":\"[masked]\",\"list\":[{\"secret\":\"[masked]\"}]}");
        assertEquals(JSON.readTree("{\"prompt\":\"b\",\"apiKey\":\"real\",\"list\":[{\"secret\":\"s1\"}]}"),
                Masking.restoreMasked(edited, stored));
        JsonNode changed = JSON.readTree("{\"prompt\":\"b\",\"apiKey\":\"new-key\"}");
        assertEquals("new-key", Masking.restoreMasked(changed, stored).get("apiKey").asText());
        JsonNode literal = JSON.readTree("{\"prompt\":\"[masked]\"}");
        assertEquals("[masked]", Masking.restoreMasked(literal, stored).get("prompt").asText(),
                "only sensitive fields are restored");
    }
}
