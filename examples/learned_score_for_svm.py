"""Learn an uncertainty score for a linear SVM and use it in a reject rule.

An SVM has no probabilities; its margin is a weak uncertainty. SELE and loss
regression learn a better one from the SVM's errors on held-out data. A learned
score needs enough errors to learn from: compare it with the margin on validation
data (as ``select_regularization`` reports) before you switch.
"""

import numpy as np
from sklearn.datasets import make_classification
from sklearn.svm import LinearSVC

from abstain import BoundedAbstention
from abstain.metrics import aurc
from abstain.scores import SELE, LossRegression, margin, select_regularization

X, y = make_classification(n_samples=10000, n_features=10, n_informative=6, n_classes=4,
                           random_state=0)
trn1, trn2, val2, cal, tst = np.split(np.arange(len(y)), [2000, 4000, 5000, 7000])

svm = LinearSVC().fit(X[trn1], y[trn1])  # the predictor, trained once
pred = svm.predict(X)
loss = (pred != y).astype(float)
print(f"SVM test error: {loss[tst].mean():.3f}")

scores = {"margin": margin(svm.decision_function(X))}
for name, learner in (("SELE", SELE(random_state=0)), ("REG", LossRegression())):
    # eq. (37): one linear function of x per predicted class, fitted to the SVM's losses
    search = select_regularization(learner, X[trn2], pred[trn2], loss[trn2],
                                   X[val2], pred[val2], loss[val2])
    scores[name] = search.best.score(X, pred)
    print(f"{name}: C = {search.C:g} chosen by validation AuRC")

for name, u in scores.items():
    rule = BoundedAbstention(target_coverage=0.5, random_state=0).fit(u[cal], loss[cal])
    accepted = rule.accept(u[tst])
    print(f"{name:>6}: test AuRC {aurc(loss[tst], u[tst]):.3f}; rule for 50% coverage: "
          f"test coverage {accepted.mean():.2f}, selective risk {loss[tst][accepted].mean():.3f}")
