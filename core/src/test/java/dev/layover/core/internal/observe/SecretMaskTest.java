package dev.layover.core.internal.observe;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.layover.testing.PureTest;
import org.junit.jupiter.api.Test;

/** What the stored stack traces hide, and what they keep readable. */
@PureTest
class SecretMaskTest {

    @Test
    void secretsAreMaskedAndTheirNamesKept() {
        assertEquals("invalid key sk-[masked] (check)", SecretMask.mask("invalid key sk-abcdef1234567890 (check)"));
        assertEquals("key sk-ant-[masked]", SecretMask.mask("key sk-ant-api03-AbCdEf123456"));
        assertEquals("refused api_key=[masked] here", SecretMask.mask("refused api_key=sk-proj-Abc123DEF456ghi here"));
        assertEquals("Authorization: Bearer [masked]", SecretMask.mask("Authorization: Bearer abc.def-123_XYZ"));
        assertEquals("GET /v1/models?key=[masked]&alt=sse", SecretMask.mask("GET /v1/models?key=AIzaSyA1234567890abcdefghij&alt=sse"));
        assertEquals("GET /x?alt=sse&key=[masked]", SecretMask.mask("GET /x?alt=sse&key=plainvalue"));
        assertEquals("{\"password\": \"[masked]\"}", SecretMask.mask("{\"password\": \"p4ss\"}"));
        assertEquals("id AKIA[masked]", SecretMask.mask("id AKIAIOSFODNN7EXAMPLE"));
        assertEquals("jwt [masked] end", SecretMask.mask("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdEFGH end"));
    }

    @Test
    void ordinaryTextIsKept() {
        String frame = "\tat com.example.Translate.run(Translate.java:42)";
        assertEquals(frame, SecretMask.mask(frame));
        assertEquals("max_tokens=4096 exceeds the tokens per min limit; provider key=openai:gpt-4o",
                SecretMask.mask("max_tokens=4096 exceeds the tokens per min limit; provider key=openai:gpt-4o"));
        assertEquals(null, SecretMask.mask(null));
    }
}
