package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import org.json.JSONObject;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The Java pack reader sees what Python's read_tflite_pack sees, and refuses what it refuses. */
class PackReaderTest {
    private static byte[] fixture;
    private static JSONObject expected;
    private static final byte[] FLATBUFFER = "\u001c\u0000\u0000\u0000TFL3 not a graph".getBytes(StandardCharsets.ISO_8859_1);
    private static final String SETTINGS = "{\"pack_format\": 1, \"task\": \"sequence_classification\","
            + " \"tokenizer\": {\"type\": \"wordpiece\", \"file\": \"vocab.txt\", \"do_lower_case\": false,"
            + " \"max_seq_len\": 64}, \"inputs\": [\"input_ids\", \"attention_mask\"], \"outputs\": [\"logits\"],"
            + " \"labels\": [\"neg\", \"pos\"], \"variant\": \"fp16\"}";
    private static final String VOCAB = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n";

    @BeforeAll
    static void load() throws Exception {
        fixture = Resources.bytes("pack_fixture.tflite");
        expected = new JSONObject(Resources.text("golden_pack.json"));
    }

    /** A flatbuffer stand-in followed by a zip with absolute offsets, as Python's zipfile "a" mode writes it. */
    static byte[] packed(Map<String, byte[]> members, int method) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(FLATBUFFER);
        ZipOutputStream zip = new ZipOutputStream(out);
        for (Map.Entry<String, byte[]> m : members.entrySet()) {
            ZipEntry entry = new ZipEntry(m.getKey());
            entry.setMethod(method);
            if (method == ZipEntry.STORED) {
                CRC32 crc = new CRC32();
                crc.update(m.getValue());
                entry.setSize(m.getValue().length);
                entry.setCompressedSize(m.getValue().length);
                entry.setCrc(crc.getValue());
            }
            zip.putNextEntry(entry);
            zip.write(m.getValue());
            zip.closeEntry();
        }
        zip.finish();
        return out.toByteArray();
    }

    private static Map<String, byte[]> members(String settings) {
        Map<String, byte[]> m = new LinkedHashMap<String, byte[]>();
        m.put("albert_edge.json", settings.getBytes(StandardCharsets.UTF_8));
        m.put("labels.txt", "neg\npos\n".getBytes(StandardCharsets.UTF_8));
        m.put("vocab.txt", VOCAB.getBytes(StandardCharsets.UTF_8));
        return m;
    }

    private static String messageOf(byte[] model) {
        return assertThrows(AlbertCoreException.class, () -> ModelPack.read(model, "m.tflite")).getMessage();
    }

    @Test
    void pythonWrittenFixtureReadsAsPythonReadIt() throws Exception {
        ModelPack pack = ModelPack.read(fixture, "pack_fixture.tflite");
        assertEquals(expected.getString("tokenizer_type"), pack.tokenizerType);
        assertEquals(expected.getBoolean("do_lower_case"), pack.doLowerCase);
        assertEquals(expected.getInt("max_seq_len"), pack.maxSeqLen);
        assertEquals(Resources.strings(expected.getJSONArray("labels")), pack.labels);
        assertEquals(Resources.strings(expected.getJSONArray("inputs")), pack.inputs);
        assertEquals(Resources.strings(expected.getJSONArray("outputs")), pack.outputs);
        assertEquals(expected.getString("task"), pack.task);
        assertEquals(expected.getString("variant"), pack.variant);
        assertEquals(expected.getString("albert_edge_version"), pack.albertEdgeVersion);
        StringBuilder hex = new StringBuilder();
        for (byte b : MessageDigest.getInstance("SHA-256").digest(pack.tokenizerAsset)) {
            hex.append(String.format("%02x", b));
        }
        assertEquals(expected.getString("vocab_sha256"), hex.toString());
        assertEquals(expected.getInt("vocab_size"), pack.tokenizer().vocabSize());
    }

    /** The current export layout: standard TFLite metadata (MediaPipe's) inside the flatbuffer, same members appended. */
    @Test
    void fileWithStandardMetadataReadsLikeThePlainPack() throws Exception {
        byte[] withMetadata = Resources.bytes("pack_fixture_metadata.tflite");
        ModelPack plain = ModelPack.read(fixture, "pack_fixture.tflite");
        ModelPack pack = ModelPack.read(withMetadata, "pack_fixture_metadata.tflite");
        assertEquals(plain.tokenizerType, pack.tokenizerType);
        assertEquals(plain.doLowerCase, pack.doLowerCase);
        assertEquals(plain.maxSeqLen, pack.maxSeqLen);
        assertEquals(Resources.strings(expected.getJSONArray("labels")), pack.labels);
        assertEquals(plain.inputs, pack.inputs);
        assertEquals(plain.outputs, pack.outputs);
        assertEquals(plain.variant, pack.variant);
        assertArrayEquals(plain.tokenizerAsset, pack.tokenizerAsset);
        assertEquals(expected.getInt("vocab_size"), pack.tokenizer().vocabSize());
        ModelPack streamed = ModelPack.read(new ByteArrayInputStream(withMetadata), 1 << 24, "stream");
        assertEquals(plain.labels, streamed.labels);
    }

    @Test
    void directBufferLikeAMappedAssetReadsAndKeepsItsPosition() throws Exception {
        ByteBuffer direct = ByteBuffer.allocateDirect(fixture.length);
        direct.put(fixture);
        direct.position(7);
        ModelPack pack = ModelPack.read(direct, "mapped");
        assertEquals(Resources.strings(expected.getJSONArray("labels")), pack.labels);
        assertEquals(7, direct.position());
        assertEquals(fixture.length, direct.limit());
    }

    @Test
    void streamReadMatchesBufferRead() throws Exception {
        ModelPack pack = ModelPack.read(new ByteArrayInputStream(fixture), 1 << 24, "stream");
        assertArrayEquals(ModelPack.read(fixture, "bytes").tokenizerAsset, pack.tokenizerAsset);
    }

    @Test
    void javaWrittenStoredZipGivesSettingsLabelsAndVocab() throws Exception {
        ModelPack pack = ModelPack.read(packed(members(SETTINGS), ZipEntry.STORED), "m.tflite");
        assertEquals(Arrays.asList("neg", "pos"), pack.labels);
        assertEquals(64, pack.maxSeqLen);
        assertEquals(false, pack.doLowerCase);
        assertEquals(Arrays.asList("input_ids", "attention_mask"), pack.inputs);
        assertEquals(4, pack.tokenizer().convertTokensToIds(Arrays.asList("hello"))[0]);
    }

    @Test
    void modelWithoutArchiveIsRefused() {
        assertTrue(messageOf(FLATBUFFER).contains("carries no albert-edge pack"));
    }

    @Test
    void truncatedModelIsRefused() {
        byte[] cut = Arrays.copyOf(fixture, fixture.length - 10);
        assertTrue(messageOf(cut).contains("m.tflite: "));
    }

    @Test
    void corruptedVocabByteFailsCrc() throws Exception {
        byte[] model = packed(members(SETTINGS), ZipEntry.STORED);
        String text = new String(model, StandardCharsets.ISO_8859_1);
        int at = text.indexOf("hello");
        model[at] = 'j';
        assertTrue(messageOf(model).contains("CRC-32"));
    }

    @Test
    void deflatedMemberIsRefused() throws Exception {
        assertTrue(messageOf(packed(members(SETTINGS), ZipEntry.DEFLATED)).contains("must be ZIP_STORED"));
    }

    @Test
    void memberNameWithAPathIsRefused() throws Exception {
        Map<String, byte[]> m = members(SETTINGS);
        m.put("../evil.txt", new byte[] {1});
        assertTrue(messageOf(packed(m, ZipEntry.STORED)).contains("not a plain file name"));
    }

    @Test
    void tooManyMembersAreRefused() throws Exception {
        Map<String, byte[]> m = members(SETTINGS);
        for (int i = 0; i < ModelPack.MAX_MEMBERS; i++) {
            m.put("extra" + i, new byte[] {1});
        }
        assertTrue(messageOf(packed(m, ZipEntry.STORED)).contains("at most 32"));
    }

    @Test
    void oversizedSettingsMemberIsRefusedBeforeReading() throws Exception {
        Map<String, byte[]> m = members(SETTINGS);
        m.put("albert_edge.json", new byte[(1 << 20) + 1]);
        assertTrue(messageOf(packed(m, ZipEntry.STORED)).contains("the limit is 1048576"));
    }

    @Test
    void unknownPackFormatIsRefused() throws Exception {
        String v2 = SETTINGS.replace("\"pack_format\": 1", "\"pack_format\": 2");
        assertTrue(messageOf(packed(members(v2), ZipEntry.STORED)).contains("pack_format is 2"));
    }

    @Test
    void labelsFileDisagreeingWithSettingsIsRefused() throws Exception {
        Map<String, byte[]> m = members(SETTINGS);
        m.put("labels.txt", "pos\nneg\n".getBytes(StandardCharsets.UTF_8));
        assertTrue(messageOf(packed(m, ZipEntry.STORED)).contains("disagrees"));
    }

    @Test
    void outOfRangeMaxSeqLenIsRefused() throws Exception {
        String bad = SETTINGS.replace("\"max_seq_len\": 64", "\"max_seq_len\": 2");
        assertTrue(messageOf(packed(members(bad), ZipEntry.STORED)).contains("max_seq_len is 2"));
    }

    @Test
    void sentencePiecePackBuildsTheJavaSentencePieceTokenizer() throws Exception {
        Map<String, byte[]> m = members(SETTINGS.replace("\"wordpiece\", \"file\": \"vocab.txt\"",
                "\"sentencepiece\", \"file\": \"spiece.model\""));
        m.put("spiece.model", Resources.bytes("spiece.model"));
        ModelPack pack = ModelPack.read(packed(m, ZipEntry.STORED), "sp.tflite");
        assertEquals("sentencepiece", pack.tokenizerType);
        TextTokenizer tok = pack.tokenizer();
        assertTrue(tok instanceof SentencePieceTokenizer);
        assertEquals(Resources.spiece(false).tokenize("The quick brown fox."), tok.tokenize("The quick brown fox."));
    }

    @Test
    void brokenSpieceModelIsRefusedNamingThePackMember() throws Exception {
        Map<String, byte[]> m = members(SETTINGS.replace("\"wordpiece\", \"file\": \"vocab.txt\"",
                "\"sentencepiece\", \"file\": \"spiece.model\""));
        m.put("spiece.model", new byte[] {10, 100, 1});
        final ModelPack pack = ModelPack.read(packed(m, ZipEntry.STORED), "sp.tflite");
        String message = assertThrows(AlbertCoreException.class, pack::tokenizer).getMessage();
        assertTrue(message.startsWith("sp.tflite!spiece.model: not a valid SentencePiece model"), message);
    }

    @Test
    void nerModelPackIsTokenClassificationWithItsLabels() throws Exception {
        ModelPack pack = Resources.pack("ner_model.tflite");
        assertEquals(ModelPack.TOKEN_CLASSIFICATION, pack.task);
        assertEquals(java.util.Arrays.asList("O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"), pack.labels);
        assertEquals(32, pack.maxSeqLen);
        assertEquals(30, EntityExtractor.fromPack(pack).window());
        assertEquals(7, EntityExtractor.fromPack(pack).stride());
    }

    @Test
    void tokenClassificationPackWithoutLabelsIsRefused() throws Exception {
        final Map<String, byte[]> m = members(SETTINGS.replace("sequence_classification", "token_classification")
                .replace(" \"labels\": [\"neg\", \"pos\"],", ""));
        m.remove("labels.txt");
        String message = assertThrows(AlbertCoreException.class,
                () -> ModelPack.read(packed(m, ZipEntry.STORED), "ner.tflite")).getMessage();
        assertTrue(message.contains("token_classification but it carries no labels"), message);
    }

    @Test
    void questionAnsweringPackReadsWithoutLabelsAndAnUnknownTaskIsRefused() throws Exception {
        final Map<String, byte[]> m = members(SETTINGS.replace("sequence_classification", "question_answering")
                .replace(" \"labels\": [\"neg\", \"pos\"],", ""));
        m.remove("labels.txt");
        final ModelPack noSpans = ModelPack.read(packed(m, ZipEntry.STORED), "qa.tflite");
        assertEquals(ModelPack.QUESTION_ANSWERING, noSpans.task);
        String missing = assertThrows(AlbertCoreException.class, () -> QuestionAnswerer.fromPack(noSpans)).getMessage();
        assertTrue(missing.contains("start_logits and end_logits"), missing);
        Map<String, byte[]> spans = members(SETTINGS.replace("sequence_classification", "question_answering")
                .replace(" \"labels\": [\"neg\", \"pos\"],", "")
                .replace("[\"logits\"]", "[\"start_logits\", \"end_logits\"]"));
        spans.remove("labels.txt");
        QuestionAnswerer qa = QuestionAnswerer.fromPack(ModelPack.read(packed(spans, ZipEntry.STORED), "qa.tflite"));
        assertEquals(64, qa.maxSeqLen());
        assertEquals(30, qa.maxQuestionTokens());
        final Map<String, byte[]> other = members(SETTINGS.replace("sequence_classification", "summarization"));
        String message = assertThrows(AlbertCoreException.class,
                () -> ModelPack.read(packed(other, ZipEntry.STORED), "x.tflite")).getMessage();
        assertTrue(message.contains("question_answering"), message);
    }
}
