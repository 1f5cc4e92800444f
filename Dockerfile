FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir ".[bm25]"
ENV LITELLM_LOCAL_MODEL_COST_MAP=True
EXPOSE 8000
CMD ["ragpg", "serve", "--host", "0.0.0.0", "--port", "8000"]
