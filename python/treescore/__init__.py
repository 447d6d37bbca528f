"""treescore: LightGBM scoring inside Spark, batched through native code, planned from Python.

    import treescore
    spark = treescore.configure(SparkSession.builder).getOrCreate()
    model = treescore.Model.load("s3a://models/churn.txt")
    df.withColumn("p", treescore.score(model))

Python only builds the query: the scoring itself runs in the executors' JVMs and native code.
"""
from treescore.ensembles import Cascade, Ensemble, FittedCascade, Grid, Member, Routed, load, score_grid
from treescore.errors import InvalidModelError
from treescore.functions import score
from treescore.model import Model
from treescore.registry import register
from treescore.jars import coordinate, jar_path
from treescore.session import configure, enable
from treescore.top_k import ApproximateTopK, top_k

__all__ = ["configure", "enable", "jar_path", "coordinate", "Model", "score", "register", "InvalidModelError",
           "Ensemble", "Member", "Routed", "Cascade", "FittedCascade", "Grid", "score_grid", "load",
           "top_k", "ApproximateTopK"]
__version__ = "0.1.0"
