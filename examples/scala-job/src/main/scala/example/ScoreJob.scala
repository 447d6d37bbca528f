package example

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.functions.col

import treescore.functions.score
import treescore.model.TreeModel

/**
 * Scores a Parquet dataset with a LightGBM model and writes `id` and `score` to Parquet.
 *
 * Usage: spark-submit --jars treescore.jar --class example.ScoreJob example-job.jar MODEL INPUT OUTPUT
 *
 * The model's feature names select the input columns; the extensions that batch the score
 * calls come from `spark.sql.extensions`, set here so the job needs no extra flags.
 */
object ScoreJob {
  def main(args: Array[String]): Unit = {
    require(args.length == 3, "usage: ScoreJob MODEL INPUT OUTPUT")
    val Array(modelPath, input, output) = args
    val spark = SparkSession.builder()
      .appName("treescore-example-job")
      .config("spark.sql.extensions", "treescore.TreescoreExtensions")
      .getOrCreate()
    try {
      val model = TreeModel.load(modelPath)
      spark.read.parquet(input)
        .select(col("id"), score(model).as("score"))
        .write.mode("overwrite").parquet(output)
    } finally {
      spark.stop()
    }
  }
}
