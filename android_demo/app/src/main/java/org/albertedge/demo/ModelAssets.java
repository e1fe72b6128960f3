package org.albertedge.demo;

import android.content.Context;
import android.content.res.AssetFileDescriptor;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

import org.albertedge.core.AlbertClassifier;
import org.albertedge.core.AlbertEntityRecognizer;
import org.albertedge.core.AlbertQuestionAnswerer;
import org.albertedge.core.ModelPack;

/**
 * The packed model in the APK's assets, memory-mapped once and handed to albert-core's task
 * classes with a {@link LiteRtEngine}: the three calls an app makes (map, read the pack, build the
 * task), kept here so the Activity and the instrumented test build tasks the same way.
 */
final class ModelAssets {
    static final String MODEL_ASSET = "model.tflite";

    final MappedByteBuffer model;
    final ModelPack pack;

    private ModelAssets(MappedByteBuffer model, ModelPack pack) {
        this.model = model;
        this.pack = pack;
    }

    /** Maps {@link #MODEL_ASSET} and reads its pack (vocab, labels, settings). */
    static ModelAssets open(Context context) throws IOException {
        MappedByteBuffer model = mapAsset(context, MODEL_ASSET);
        return new ModelAssets(model, ModelPack.read(model, MODEL_ASSET));
    }

    /** Map an uncompressed asset (see noCompress in app/build.gradle.kts) without copying it. */
    static MappedByteBuffer mapAsset(Context context, String name) throws IOException {
        AssetFileDescriptor fd = context.getAssets().openFd(name);
        try {
            FileInputStream in = new FileInputStream(fd.getFileDescriptor());
            try {
                FileChannel channel = in.getChannel();
                return channel.map(FileChannel.MapMode.READ_ONLY, fd.getStartOffset(), fd.getDeclaredLength());
            } finally {
                in.close();
            }
        } finally {
            fd.close();
        }
    }

    private LiteRtEngine engine(int threads) {
        return new LiteRtEngine(model, MODEL_ASSET, threads);
    }

    AlbertClassifier classifier(int threads) {
        return new AlbertClassifier(pack, engine(threads));
    }

    AlbertEntityRecognizer recognizer(int threads) {
        return new AlbertEntityRecognizer(pack, engine(threads));
    }

    AlbertQuestionAnswerer answerer(int threads) {
        return new AlbertQuestionAnswerer(pack, engine(threads));
    }
}
