# sw.sh WF CORPUS W : re-configure the workflow's retriever with sparse_weight W, then the workflow's memory and final steps
set -e
WF=$1; C=$2; W=$3; O=sw_${C}_$W; mkdir -p $O
python -m spacy_arbo configure $WF/training/$C/retriever/model-best $O/retriever --set sparse_weight=$W
python -m spacy_arbo add-memory $O/retriever $O/retriever_memory --from $WF/corpus/$C/train.spacy --dev $WF/corpus/$C/dev.spacy
python -m spacy_arbo tune-threshold $O/retriever $WF/corpus/$C/dev.spacy --output $O/final_retriever
python -m spacy_arbo add-memory $O/final_retriever $O/final_retriever --from $WF/corpus/$C/train.spacy --dev $WF/corpus/$C/dev.spacy
for p in retriever retriever_memory final_retriever; do for s in $SPLITS; do
python -m spacy_arbo evaluate $O/$p $WF/corpus/$C/$s.spacy --seen-from $WF/corpus/$C/train.spacy --output $O/${p}_$s.json > /dev/null
done; done
